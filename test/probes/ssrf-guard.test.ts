import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { Dispatcher } from 'undici'
import { request } from 'undici'
import { normalizeProbeDefinition } from '../../src/probes/probe-definition.ts'
import { type ProbeVersion, runProbe } from '../../src/probes/probe-runner.ts'
import {
  assertAllowedRemoteAddress,
  checkRegistrationUrl,
  createGuardedDispatcher,
  type HostLookup,
  hostAllowed,
  isLoopbackName,
  isPublicUnicast,
  SsrfBlockedError,
  type SsrfPolicy,
  vetHost,
} from '../../src/probes/ssrf-guard.ts'

// Only loopback servers are started, and only loopback is ever dialled. Non-loopback,
// non-public addresses are exercised through pure functions and through refusals that
// happen before any dispatch (proved with a dispatcher that records being called).

const strict: SsrfPolicy = { allowedHosts: [], allowPrivate: false }
const permissive: SsrfPolicy = { allowedHosts: [], allowPrivate: true }

interface CountingServer {
  server: http.Server
  port: number
  connections: number
  requests: http.IncomingMessage[]
}

async function listen(host: string, port = 0): Promise<CountingServer> {
  const server = http.createServer((req, res) => {
    counting.requests.push(req)
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ state: 'settled' }))
  })
  const counting: CountingServer = { server, port: 0, connections: 0, requests: [] }
  server.on('connection', () => {
    counting.connections++
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  counting.port = (server.address() as AddressInfo).port
  return counting
}

async function close(counting: CountingServer | null): Promise<void> {
  if (counting === null) return
  counting.server.closeAllConnections()
  await new Promise<void>((resolve) => counting.server.close(() => resolve()))
}

function probeFor(url: string): ProbeVersion {
  const definition = normalizeProbeDefinition({
    name: 'ssrf',
    request: { url },
    timeout_ms: 2000,
    retries: 2,
    predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
  })
  return { probe_id: 'p-ssrf', version: 1, probe_digest: 'sha256:test', definition }
}

const outcome = { subagent_id: 'sa-1', run_id: 'run-1' }

/** A dispatcher that must never be reached: proves a refusal happened before dispatch. */
function sentinelDispatcher(): { dispatcher: Dispatcher; calls: () => number } {
  let calls = 0
  const dispatcher = {
    dispatch() {
      calls++
      throw new Error('sentinel dispatcher reached: a request was attempted')
    },
  } as unknown as Dispatcher
  return { dispatcher, calls: () => calls }
}

describe('isPublicUnicast', () => {
  const notPublic = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback /8'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['100.64.0.1', 'CGNAT'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['198.18.0.1', 'benchmarking'],
    ['192.0.2.1', 'documentation TEST-NET-1'],
    ['198.51.100.1', 'documentation TEST-NET-2'],
    ['203.0.113.1', 'documentation TEST-NET-3'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.1', 'IETF protocol assignments'],
    ['::1', 'IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%lo', 'IPv6 link-local with zone'],
    ['fc00::1', 'ULA'],
    ['fd00::1', 'ULA'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:8.8.8.8', 'IPv4-mapped (refused whatever it maps to)'],
    ['::127.0.0.1', 'IPv4-compatible'],
    ['::7f00:1', 'IPv4-compatible, hex'],
    ['64:ff9b::a00:1', 'NAT64 well-known prefix → 10.0.0.1'],
    ['64:ff9b::7f00:1', 'NAT64 well-known prefix → 127.0.0.1'],
    ['2002:7f00:1::1', '6to4'],
    ['2001::1', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['fec0::1', 'deprecated site-local'],
    ['4000::1', 'outside 2000::/3'],
    ['127.1', 'non-canonical notation (never guessed)'],
    ['2130706433', 'integer notation'],
    ['localhost', 'a name'],
    ['', 'empty'],
  ]
  for (const [address, why] of notPublic) {
    it(`refuses ${address || "''"} (${why})`, () => {
      assert.equal(isPublicUnicast(address!), false)
    })
  }

  for (const address of [
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700::1111',
    '2001:4860:4860::8888',
    '[2606:4700::1111]',
  ]) {
    it(`accepts public unicast ${address}`, () => {
      assert.equal(isPublicUnicast(address), true)
    })
  }
})

describe('hostAllowed', () => {
  const policy = (allowedHosts: string[]): SsrfPolicy => ({ allowedHosts, allowPrivate: false })

  it('allows any host when the list is empty', () => {
    assert.equal(hostAllowed('anything.example', policy([])), true)
  })

  it('matches exact names case-insensitively, ignoring a trailing dot', () => {
    const p = policy(['Ledger.Example.com'])
    assert.equal(hostAllowed('ledger.example.com', p), true)
    assert.equal(hostAllowed('LEDGER.EXAMPLE.COM.', p), true)
    assert.equal(hostAllowed('api.ledger.example.com', p), false)
    assert.equal(hostAllowed('ledger.example.com.evil.example', p), false)
  })

  it('matches *.example.com against subdomains only', () => {
    const p = policy(['*.example.com'])
    assert.equal(hostAllowed('api.example.com', p), true)
    assert.equal(hostAllowed('a.b.example.com', p), true)
    assert.equal(hostAllowed('example.com', p), false)
    assert.equal(hostAllowed('badexample.com', p), false)
    assert.equal(hostAllowed('example.com.evil.example', p), false)
  })

  it('compares IP literals after normalization', () => {
    assert.equal(hostAllowed('[2606:4700:0:0:0:0:0:1111]', policy(['2606:4700::1111'])), true)
    assert.equal(hostAllowed('2606:4700::1111', policy(['[2606:4700::1111]'])), true)
    assert.equal(hostAllowed('127.0.0.1', policy(['127.1'])), true)
    assert.equal(hostAllowed('8.8.8.8', policy(['8.8.4.4'])), false)
  })

  it('never lets a wildcard match an IP literal', () => {
    assert.equal(hostAllowed('1.0.0.127', policy(['*.0.0.127'])), false)
  })

  it('treats a pattern with a port, path or credentials as matching nothing', () => {
    assert.equal(hostAllowed('ledger.example.com', policy(['ledger.example.com:443'])), false)
    assert.equal(hostAllowed('ledger.example.com', policy(['ledger.example.com/x'])), false)
    assert.equal(hostAllowed('ledger.example.com', policy(['u@ledger.example.com'])), false)
  })
})

// Every refusal of a non-public destination says how an operator allows it, and an allowlist refusal
// names the allowlist.
const PRIVATE_WAY_OUT = /ARBITER_PROBE_ALLOW_PRIVATE=true .*ARBITER_PROBE_ALLOWED_HOSTS/
const ALLOWLIST_WAY_OUT = /not in the allowed hosts; add it to ARBITER_PROBE_ALLOWED_HOSTS/

// Loopback by definition (RFC 6761), in every spelling a URL parser lets through to the host.
const loopbackNames = [
  'localhost',
  'localhost.',
  'LOCALHOST',
  'LocalHost.',
  'api.localhost',
  'api.localhost.',
  'a.b.LOCALHOST',
  'localhost..',
]

describe('isLoopbackName', () => {
  for (const name of [...loopbackNames, '[localhost]']) {
    it(`is true for ${name}`, () => {
      assert.equal(isLoopbackName(name), true)
    })
  }
  for (const name of [
    'localhost.example.com',
    'notlocalhost',
    'localhostx',
    'mylocalhost.com',
    '127.0.0.1',
    '',
  ]) {
    it(`is false for ${JSON.stringify(name)}`, () => {
      assert.equal(isLoopbackName(name), false)
    })
  }
})

describe('checkRegistrationUrl', () => {
  it('relies on WHATWG URL normalizing every IPv4 notation to dotted decimal', () => {
    for (const url of ['http://127.1/', 'http://2130706433/', 'http://0x7f.1/', 'http://017700000001/']) {
      assert.equal(new URL(url).hostname, '127.0.0.1', url)
    }
    assert.equal(new URL('http://[::ffff:127.0.0.1]/').hostname, '[::ffff:7f00:1]')
  })

  const nonPublic = [
    'http://127.0.0.1/',
    'http://127.1/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://017700000001/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::1]/',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/',
    'http://192.168.1.1/',
    'http://100.64.0.1/',
    'http://[fd00::1]/',
    'http://224.0.0.1/',
    'https://0.0.0.0:8443/{{params.id}}',
  ]
  for (const url of nonPublic) {
    it(`refuses the non-public literal ${url}, saying how to allow it, but allows it when allowPrivate`, () => {
      const refusal = checkRegistrationUrl(url, strict) ?? ''
      assert.match(refusal, /not a public unicast address/)
      assert.match(refusal, PRIVATE_WAY_OUT)
      assert.equal(checkRegistrationUrl(url, permissive), null)
    })
  }

  for (const name of loopbackNames) {
    it(`refuses the loopback name ${name} like 127.0.0.1, but allows it when allowPrivate`, () => {
      const url = `http://${name}:8080/refunds/{{params.id}}`
      const refusal = checkRegistrationUrl(url, strict) ?? ''
      assert.match(refusal, /is a loopback name and is not a public unicast address/)
      assert.match(refusal, PRIVATE_WAY_OUT)
      assert.equal(checkRegistrationUrl(url, permissive), null)
    })
  }

  it('sees through spellings of localhost the URL parser normalizes', () => {
    for (const url of [
      'http://local%68ost/',
      'http://\uFF4C\uFF4F\uFF43\uFF41\uFF4C\uFF48\uFF4F\uFF53\uFF54/',
    ]) {
      assert.match(checkRegistrationUrl(url, strict) ?? '', /loopback name/, url)
    }
  })

  it('accepts public literals and names (names are checked at every execution)', () => {
    assert.equal(checkRegistrationUrl('https://8.8.8.8/x', strict), null)
    assert.equal(checkRegistrationUrl('https://ledger.example.com/refunds/{{params.id}}', strict), null)
    assert.equal(checkRegistrationUrl('https://localhost.example.com/', strict), null)
  })

  it('refuses schemes other than http and https, and unparseable URLs', () => {
    assert.match(checkRegistrationUrl('ftp://ledger.example.com/', permissive) ?? '', /scheme/)
    assert.match(checkRegistrationUrl('gopher://127.0.0.1/', permissive) ?? '', /scheme/)
    assert.match(checkRegistrationUrl('http://[::1/', permissive) ?? '', /parse/)
  })

  it('refuses a host outside the allowlist', () => {
    const policy = { allowedHosts: ['*.example.com'], allowPrivate: false }
    assert.equal(checkRegistrationUrl('https://ledger.example.com/', policy), null)
    assert.match(checkRegistrationUrl('https://ledger.example.org/', policy) ?? '', ALLOWLIST_WAY_OUT)
  })

  it('refuses a templated host: an outcome may not choose where the probe goes', () => {
    for (const policy of [strict, permissive]) {
      assert.match(checkRegistrationUrl('https://{{params.host}}/', policy) ?? '', /not in its host/)
    }
  })
})

describe('vetHost', () => {
  function recordingLookup(answers: Record<string, string[]>): { lookup: HostLookup; calls: string[] } {
    const calls: string[] = []
    const lookup: HostLookup = async (hostname) => {
      calls.push(hostname)
      return (answers[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
    }
    return { lookup, calls }
  }

  it('checks IP literals directly and never looks them up', async () => {
    const { lookup, calls } = recordingLookup({})
    for (const literal of ['127.0.0.1', '[::1]', '::ffff:7f00:1', '169.254.169.254', '10.0.0.1', 'fd00::1']) {
      await assert.rejects(vetHost(literal, strict, lookup), SsrfBlockedError)
    }
    assert.deepEqual(await vetHost('8.8.8.8', strict, lookup), [{ address: '8.8.8.8', family: 4 }])
    assert.deepEqual(calls, [])
  })

  it('refuses a name when ANY resolved address is not public, whatever the order', async () => {
    const { lookup } = recordingLookup({
      'mixed-a.test': ['8.8.8.8', '127.0.0.1'],
      'mixed-b.test': ['10.0.0.1', '2606:4700::1111'],
      'mapped.test': ['2606:4700::1111', '::ffff:169.254.169.254'],
    })
    for (const name of ['mixed-a.test', 'mixed-b.test', 'mapped.test']) {
      await assert.rejects(vetHost(name, strict, lookup), (err: unknown) => {
        assert.ok(err instanceof SsrfBlockedError)
        assert.equal(err.connected, false)
        return true
      })
    }
  })

  it('returns every address of a name whose addresses are all public', async () => {
    const { lookup } = recordingLookup({ 'ok.test': ['8.8.8.8', '2606:4700::1111'] })
    assert.deepEqual(
      (await vetHost('ok.test', strict, lookup)).map((a) => a.address),
      ['8.8.8.8', '2606:4700::1111'],
    )
  })

  it('refuses loopback names without a DNS query, saying how to allow them', async () => {
    const { lookup, calls } = recordingLookup({ localhost: ['8.8.8.8'], 'localhost.': ['8.8.8.8'] })
    for (const name of loopbackNames) {
      await assert.rejects(vetHost(name, strict, lookup), (err: unknown) => {
        assert.ok(err instanceof SsrfBlockedError, name)
        assert.match(err.message, /loopback name/)
        assert.match(err.message, PRIVATE_WAY_OUT)
        return true
      })
    }
    assert.deepEqual(calls, [], 'no lookup happened')
  })

  it('answers loopback names with the loopback addresses when allowPrivate, still without DNS', async () => {
    const { lookup, calls } = recordingLookup({ 'localhost.': ['8.8.8.8'] })
    for (const name of loopbackNames) {
      assert.deepEqual(await vetHost(name, permissive, lookup), [
        { address: '127.0.0.1', family: 4 },
        { address: '::1', family: 6 },
      ])
    }
    assert.deepEqual(calls, [])
  })

  it('says how to allow what it refuses after resolving a name', async () => {
    const { lookup } = recordingLookup({ 'internal.test': ['10.0.0.1'] })
    await assert.rejects(vetHost('internal.test', strict, lookup), {
      message:
        /internal\.test resolves to 10\.0\.0\.1, which is not a public unicast address; on a trusted network set ARBITER_PROBE_ALLOW_PRIVATE=true/,
    })
  })

  it('applies the allowlist before resolving', async () => {
    const { lookup, calls } = recordingLookup({ 'other.test': ['8.8.8.8'] })
    await assert.rejects(
      vetHost('other.test', { allowedHosts: ['ledger.test'], allowPrivate: false }, lookup),
      { message: ALLOWLIST_WAY_OUT },
    )
    assert.deepEqual(calls, [])
  })

  it('allows private answers when allowPrivate is set', async () => {
    const { lookup } = recordingLookup({ 'internal.test': ['10.0.0.1'] })
    assert.deepEqual(await vetHost('internal.test', permissive, lookup), [{ address: '10.0.0.1', family: 4 }])
  })
})

describe('assertAllowedRemoteAddress (post-connect re-check)', () => {
  it('refuses a non-public remote address, marking the error as post-connect', () => {
    for (const remoteAddress of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '10.1.2.3', '169.254.169.254']) {
      assert.throws(
        () => assertAllowedRemoteAddress({ remoteAddress }, strict),
        (err: unknown) =>
          err instanceof SsrfBlockedError && err.connected && PRIVATE_WAY_OUT.test(err.message),
        remoteAddress,
      )
    }
  })

  it('refuses a socket without a remote address', () => {
    assert.throws(() => assertAllowedRemoteAddress({}, permissive), SsrfBlockedError)
    assert.throws(
      () => assertAllowedRemoteAddress({ remoteAddress: undefined }, permissive),
      SsrfBlockedError,
    )
  })

  it('accepts a public remote address, and a private one when allowPrivate', () => {
    assert.doesNotThrow(() => assertAllowedRemoteAddress({ remoteAddress: '8.8.8.8' }, strict))
    assert.doesNotThrow(() => assertAllowedRemoteAddress({ remoteAddress: '2606:4700::1111' }, strict))
    assert.doesNotThrow(() => assertAllowedRemoteAddress({ remoteAddress: '127.0.0.1' }, permissive))
  })
})

describe('guarded execution against real loopback servers', () => {
  let v4: CountingServer
  // IPv6 loopback on the same port when the host has it, so `localhost` is covered on both families.
  let v6: CountingServer | null = null
  let v6SkipReason = ''
  const dispatchers: Array<{ close(): Promise<void> }> = []

  function guarded(policy: SsrfPolicy, lookup?: HostLookup): Dispatcher {
    const agent = createGuardedDispatcher(policy, lookup ? { lookup } : {})
    dispatchers.push(agent)
    return agent
  }

  function totalConnections(): number {
    return v4.connections + (v6?.connections ?? 0)
  }

  before(async () => {
    v4 = await listen('127.0.0.1')
    try {
      v6 = await listen('::1', v4.port)
    } catch (err) {
      try {
        v6 = await listen('::1')
      } catch {
        v6SkipReason = `IPv6 loopback unavailable: ${(err as Error).message}`
      }
    }
  })

  after(async () => {
    await Promise.all(dispatchers.map((d) => d.close()))
    await close(v4)
    await close(v6)
  })

  function resetCounts(): void {
    v4.connections = 0
    if (v6) v6.connections = 0
  }

  const loopbackNotations = (port: number) => [
    `http://127.0.0.1:${port}/`,
    `http://127.1:${port}/`,
    `http://2130706433:${port}/`,
    `http://0x7f.1:${port}/`,
    `http://017700000001:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    ...loopbackNames.map((name) => `http://${name}:${port}/`),
  ]

  it('the loopback server is reachable when private addresses are allowed (control)', async () => {
    resetCounts()
    const { record } = await runProbe(probeFor(`http://127.0.0.1:${v4.port}/`), {}, outcome, {
      policy: permissive,
      env: {},
      dispatcher: guarded(permissive),
    })
    assert.equal(record.result, 'success')
    assert.equal(v4.connections, 1)
  })

  it('runProbe refuses every loopback notation and name with ssrf_blocked, 0 attempts, no DNS query and zero connections', async () => {
    let lookups = 0
    const dispatcher = guarded(strict, async () => {
      lookups++
      return [{ address: '8.8.8.8', family: 4 }]
    })
    for (const url of loopbackNotations(v4.port)) {
      resetCounts()
      const { record } = await runProbe(probeFor(url), {}, outcome, { policy: strict, env: {}, dispatcher })
      assert.equal(record.error?.code, 'ssrf_blocked', url)
      assert.match(record.error?.detail ?? '', PRIVATE_WAY_OUT, url)
      assert.equal(record.attempts, 0, url)
      assert.equal(record.http_status, null, url)
      assert.equal(totalConnections(), 0, url)
    }
    assert.equal(lookups, 0)
  })

  it('runProbe refuses http://[::1]:PORT with zero connections', async (t) => {
    if (v6 === null) {
      t.skip(v6SkipReason)
      return
    }
    resetCounts()
    const { record } = await runProbe(probeFor(`http://[::1]:${v6.port}/`), {}, outcome, {
      policy: strict,
      env: {},
      dispatcher: guarded(strict),
    })
    assert.equal(record.error?.code, 'ssrf_blocked')
    assert.equal(totalConnections(), 0)
  })

  it('the connector itself refuses IP literals (undici never calls lookup for them), bypassing the URL pre-check', async () => {
    let lookups = 0
    const dispatcher = guarded(strict, async () => {
      lookups++
      return [{ address: '127.0.0.1', family: 4 }]
    })
    const literals = [`http://127.0.0.1:${v4.port}/`, `http://[::ffff:127.0.0.1]:${v4.port}/`]
    if (v6 !== null) literals.push(`http://[::1]:${v6.port}/`)
    for (const url of literals) {
      resetCounts()
      await assert.rejects(request(url, { dispatcher }), SsrfBlockedError, url)
      assert.equal(totalConnections(), 0, url)
    }
    assert.equal(lookups, 0)
  })

  it('the connector itself refuses loopback names without a DNS query, bypassing the URL pre-check', async () => {
    let lookups = 0
    const dispatcher = guarded(strict, async () => {
      lookups++
      return [{ address: '8.8.8.8', family: 4 }]
    })
    for (const name of loopbackNames) {
      resetCounts()
      await assert.rejects(request(`http://${name}:${v4.port}/`, { dispatcher }), {
        name: 'SsrfBlockedError',
        message: /loopback name/,
      })
      assert.equal(totalConnections(), 0, name)
    }
    assert.equal(lookups, 0)
  })

  it('with allowPrivate, reaches loopback names (trailing dot included) without a DNS query', async () => {
    let lookups = 0
    const dispatcher = guarded(permissive, async () => {
      lookups++
      throw Object.assign(new Error('no DNS here'), { code: 'ENOTFOUND' })
    })
    for (const name of ['localhost', 'localhost.', 'api.localhost.']) {
      const { record } = await runProbe(probeFor(`http://${name}:${v4.port}/`), {}, outcome, {
        policy: permissive,
        env: {},
        dispatcher,
      })
      assert.equal(record.result, 'success', `${name}: ${JSON.stringify(record.error)}`)
    }
    assert.equal(lookups, 0)
  })

  it('a name resolved by an injected lookup to loopback is refused without connecting', async () => {
    resetCounts()
    const lookup: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }]
    const { record } = await runProbe(probeFor(`http://rebind.test:${v4.port}/`), {}, outcome, {
      policy: strict,
      env: {},
      dispatcher: guarded(strict, lookup),
    })
    assert.equal(record.error?.code, 'ssrf_blocked')
    assert.equal(record.attempts, 0, 'an SSRF refusal is not retried and not an attempt')
    assert.equal(totalConnections(), 0)
  })

  it('with allowPrivate, connects to the vetted address while keeping the name in the Host header', async () => {
    resetCounts()
    v4.requests.length = 0
    const lookup: HostLookup = async () => [{ address: '127.0.0.1', family: 4 }]
    const { record } = await runProbe(probeFor(`http://ledger.test:${v4.port}/x`), {}, outcome, {
      policy: permissive,
      env: {},
      dispatcher: guarded(permissive, lookup),
    })
    assert.equal(record.result, 'success')
    assert.equal(v4.requests[0]?.headers.host, `ledger.test:${v4.port}`)
  })

  it('falls back to the next vetted address when the first refuses the connection', async () => {
    // Same port on two loopback addresses: 127.0.0.2 has no listener (connection refused).
    const lookup: HostLookup = async () => [
      { address: '127.0.0.2', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ]
    resetCounts()
    const { record } = await runProbe(probeFor(`http://dual.test:${v4.port}/`), {}, outcome, {
      policy: permissive,
      env: {},
      dispatcher: guarded(permissive, lookup),
    })
    assert.equal(record.result, 'success', JSON.stringify(record))
    assert.equal(v4.connections, 1)
  })

  it('refuses a host outside the allowlist with zero connections, even when private addresses are allowed', async () => {
    resetCounts()
    const policy = { allowedHosts: ['ledger.example.com'], allowPrivate: true }
    const dispatcher = guarded(policy)
    for (const url of [`http://127.0.0.1:${v4.port}/`, `http://localhost:${v4.port}/`]) {
      const { record } = await runProbe(probeFor(url), {}, outcome, { policy, env: {}, dispatcher })
      assert.equal(record.error?.code, 'ssrf_blocked', url)
      assert.match(record.error?.detail ?? '', ALLOWLIST_WAY_OUT)
    }
    await assert.rejects(request(`http://localhost:${v4.port}/`, { dispatcher }), SsrfBlockedError)
    assert.equal(totalConnections(), 0)
  })

  it('an allowlisted host is reached when private addresses are allowed', async () => {
    resetCounts()
    const policy = { allowedHosts: ['LOCALHOST'], allowPrivate: true }
    const { record } = await runProbe(probeFor(`http://localhost:${v4.port}/`), {}, outcome, {
      policy,
      env: {},
      dispatcher: guarded(policy),
    })
    assert.equal(record.result, 'success')
  })

  it('refuses non-loopback private, link-local, CGNAT, ULA and multicast literals before any dispatch', async () => {
    const targets = [
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://[fd00::1]/',
      'http://224.0.0.1/',
      'http://[::ffff:10.0.0.1]/',
    ]
    for (const url of targets) {
      const sentinel = sentinelDispatcher()
      const started = performance.now()
      const { record } = await runProbe(probeFor(url), {}, outcome, {
        policy: strict,
        env: {},
        dispatcher: sentinel.dispatcher,
      })
      assert.equal(record.error?.code, 'ssrf_blocked', url)
      assert.equal(record.attempts, 0, url)
      assert.equal(sentinel.calls(), 0, url)
      assert.ok(performance.now() - started < 500, `${url} refused without waiting on the network`)
    }
  })

  it('a stored definition with a templated host is refused before rendering, even when private addresses are allowed', async () => {
    const sentinel = sentinelDispatcher()
    const probe = probeFor('http://h.example/x')
    // As stored before templates were confined to path and query: the schema refuses it now.
    probe.definition.request.url = 'http://{{params.host}}/x'
    for (const policy of [strict, permissive]) {
      const { record } = await runProbe(probe, { host: '169.254.169.254' }, outcome, {
        policy,
        env: {},
        dispatcher: sentinel.dispatcher,
      })
      assert.equal(record.error?.code, 'ssrf_blocked')
      assert.match(record.error?.detail ?? '', /not in its host/)
      assert.equal(record.request.url, 'http://{{params.host}}/x', 'nothing was rendered')
    }
    assert.equal(sentinel.calls(), 0)
  })
})
