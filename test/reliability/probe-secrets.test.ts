import assert from 'node:assert/strict'
import { randomBytes, randomInt } from 'node:crypto'
import net from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { loggerOptions } from '../../src/logger.ts'
import { createApiKey } from '../../src/services/keys.ts'
import { newSigningKey } from '../helpers/app.ts'
import { createTestDatabase, type TestDatabase, testPoolMax } from '../helpers/database.ts'
import { CRITERION, EVIDENCE, uniqueRun } from '../helpers/fixtures.ts'

/**
 * A probe's header secrets never leave Arbiter, whatever they contain and whatever the target does with them.
 *
 * Secrets hold every character that JSON, URLs, headers or logs treat specially, and a few no header can
 * carry. A hostile target (a raw TCP server, so it can put any byte anywhere) echoes every one of them into
 * every place a response has: the value at the probe's pointer (as a string, a number, inside objects and
 * arrays), other fields and keys, a body that is not JSON, an oversized body, headers, the status text, a
 * redirect's Location, and a response too malformed to parse. The probe runs as dry runs and inside real
 * evaluations that sign its record into manifests; then every HTTP answer (JWS payloads decoded), every
 * manifest, every audit record (paged, exported and in each outcome's story), every stored row and every
 * log line is searched for each secret in every spelling: raw, JSON-escaped (once and twice, and with
 * non-ASCII escaped), URL- and form-encoded, base64 and base64url of its UTF-8 and Latin-1 bytes, and the
 * random marker inside it, so a fragment is caught too. Nothing may match.
 */

interface PlantedSecret {
  /** The environment variable the probe header names. */
  env: string
  value: string
  /** Random text inside the value: found anywhere, some part of the secret leaked. */
  marker: string
  /** Whether HTTP can carry it in a header (tab, space, visible ASCII, Latin-1 only). */
  sendable: boolean
}

function plant(env: string, build: (marker: string) => string, sendable: boolean): PlantedSecret {
  const marker = randomBytes(9).toString('hex')
  return { env, value: build(marker), marker, sendable }
}

const pin = `${randomInt(100_000, 999_999)}${randomInt(100_000_000, 999_999_999)}`
const SECRETS: PlantedSecret[] = [
  plant('PROBE_TOKEN_SPECIALS', (m) => `Bearer ${m}"quote\\back\ttab %41%+plus&amp=eq;é${m}`, true),
  plant('PROBE_TOKEN_JSONISH', (m) => `{"k":"${m}","e":"\\u0022"}/?#@${m}`, true),
  plant('PROBE_TOKEN_BASE64ISH', (m) => `${Buffer.from(m).toString('base64')}+/==${m}`, true),
  { env: 'PROBE_PIN', value: pin, marker: pin, sendable: true },
  plant('PROBE_TOKEN_UNICODE', (m) => `${m}-日本語-\u{1F600}-ünï-${m}`, false),
  // Not possible in a real process environment (the OS hands Node bytes), but the app takes a record.
  plant('PROBE_TOKEN_SURROGATE', (m) => `${m}\uD800-lone-${m}`, false),
  plant('PROBE_TOKEN_NEWLINE', (m) => `${m}\r\nx-injected: 1`, false),
]
const SENDABLE = SECRETS.filter((secret) => secret.sendable)
const PROBE_ENV = Object.fromEntries(SECRETS.map((secret) => [secret.env, secret.value]))

/** Every spelling of a secret a leak could take. */
function spellings(secret: PlantedSecret): Array<[string, string]> {
  const value = secret.value
  const json = JSON.stringify(value).slice(1, -1)
  const asciiJson = json.replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )
  const found: Array<[string, string]> = [
    ['raw', value],
    ['its marker', secret.marker],
    ['JSON-escaped', json],
    ['JSON-escaped twice', JSON.stringify(json).slice(1, -1)],
    ['JSON-escaped, non-ASCII as \\u', asciiJson],
    [
      'JSON-escaped, non-ASCII as \\U',
      asciiJson.replace(/\\u([0-9a-f]{4})/g, (_m, hex) => `\\u${hex.toUpperCase()}`),
    ],
    ['escape()d', escape(value)],
  ]
  try {
    found.push(['URL-encoded', encodeURIComponent(value)])
    found.push(['URI-encoded', encodeURI(value)])
    found.push(['form-encoded', new URLSearchParams({ s: value }).toString().slice(2)])
  } catch {
    // A lone surrogate cannot be URL-encoded, so no text can hold it URL-encoded.
  }
  for (const [charset, bytes] of [
    ['UTF-8', Buffer.from(value, 'utf8')],
    ['Latin-1', Buffer.from(value, 'latin1')],
  ] as const) {
    found.push([`base64 of its ${charset} bytes`, bytes.toString('base64')])
    found.push([`base64url of its ${charset} bytes`, bytes.toString('base64url')])
  }
  return found
}

/** Every (secret, spelling, where) found in `texts`. */
function leaksIn(texts: Array<[string, string]>): string[] {
  const leaks: string[] = []
  for (const secret of SECRETS) {
    for (const [spelling, text] of spellings(secret)) {
      for (const [where, haystack] of texts) {
        if (haystack.includes(text)) leaks.push(`${secret.env} ${spelling} in ${where}`)
      }
    }
  }
  return leaks
}

// ---------------------------------------------------------------------------------------------------------
// The hostile target

interface ReceivedRequest {
  path: string
  headers: Record<string, string>
}

const CRLF = '\r\n'
const latin1 = (text: string) => Buffer.from(text, 'latin1')
const utf8 = (text: string) => Buffer.from(text, 'utf8')
/** A secret as header or status-line bytes: Latin-1 when it fits, its UTF-8 bytes (obs-text) otherwise. */
const headerBytes = (secret: PlantedSecret) => (secret.sendable ? latin1(secret.value) : utf8(secret.value))

function echoHeaders(): Buffer {
  const lines: Buffer[] = []
  for (const [i, secret] of SECRETS.entries()) {
    lines.push(latin1(`x-echo-${i}: `), headerBytes(secret), latin1(CRLF))
    lines.push(latin1(`set-cookie: s${i}=`), headerBytes(secret), latin1(CRLF))
  }
  lines.push(latin1('www-authenticate: Bearer realm="'), headerBytes(SECRETS[0]!), latin1(`"${CRLF}`))
  return Buffer.concat(lines)
}

/** A body carrying every secret in fields, keys and nested values, with `state` as given (absent if undefined). */
function echoBody(state: unknown): Record<string, unknown> {
  return {
    ...(state === undefined ? {} : { state }),
    echo: SECRETS.map((secret) => secret.value),
    by_name: Object.fromEntries(SECRETS.map((secret) => [secret.env, secret.value])),
    ...Object.fromEntries(SECRETS.map((secret) => [secret.value, 'keyed by the secret'])),
    pin: Number(pin),
  }
}

function response(status: number, body: Buffer | string, extraHeaders: Buffer = Buffer.alloc(0)): Buffer {
  const bytes = typeof body === 'string' ? utf8(body) : body
  return Buffer.concat([
    latin1(`HTTP/1.1 ${status} `),
    latin1(SECRETS[0]!.value),
    latin1(CRLF),
    latin1(
      `content-type: application/json${CRLF}connection: close${CRLF}content-length: ${bytes.length}${CRLF}`,
    ),
    echoHeaders(),
    extraHeaders,
    latin1(CRLF),
    bytes,
  ])
}

/** What the target answers for each mode, and the probe error that answer must produce. */
const MODES: Record<string, { answer: () => Buffer; expect: { code: string | null; result?: string } }> = {
  settled: {
    answer: () => response(200, JSON.stringify(echoBody('settled'))),
    expect: { code: null, result: 'success' },
  },
  ...Object.fromEntries(
    SECRETS.map((secret, i) => [
      `pointer-${i}`,
      {
        answer: () =>
          response(200, JSON.stringify(echoBody(secret === SECRETS[3] ? Number(pin) : secret.value))),
        expect: { code: 'unmapped_value' },
      },
    ]),
  ),
  object: {
    answer: () => response(200, JSON.stringify(echoBody(echoBody('x')))),
    expect: { code: 'unmapped_value' },
  },
  array: {
    answer: () => response(200, JSON.stringify(echoBody(SECRETS.map((s) => s.value)))),
    expect: { code: 'unmapped_value' },
  },
  missing: {
    answer: () => response(200, JSON.stringify(echoBody(undefined))),
    expect: { code: 'pointer_missing' },
  },
  garbage: {
    answer: () => response(200, `not json: ${SECRETS.map((s) => s.value).join(' | ')}`),
    expect: { code: 'invalid_json' },
  },
  unavailable: {
    answer: () => response(503, JSON.stringify(echoBody('settled'))),
    expect: { code: 'status_mismatch' },
  },
  missing_refund: {
    answer: () => response(404, JSON.stringify(echoBody('settled'))),
    expect: { code: 'status_mismatch' },
  },
  redirect: {
    answer: () =>
      response(
        302,
        '',
        Buffer.concat([
          latin1('location: http://elsewhere.example/'),
          latin1(encodeURIComponent(SECRETS[0]!.value)),
          latin1('?raw='),
          latin1(SECRETS[1]!.value),
          latin1(CRLF),
        ]),
      ),
    expect: { code: 'redirect' },
  },
  oversized: {
    answer: () =>
      response(200, JSON.stringify({ ...echoBody('settled'), pad: SECRETS[0]!.value.repeat(40_000) })),
    expect: { code: 'response_too_large' },
  },
  malformed: {
    // A content-length no parser accepts, spelled with the secret: the parser's complaint must not quote it.
    answer: () =>
      Buffer.concat([
        latin1(`HTTP/1.1 200 OK${CRLF}content-length: 1`),
        latin1(SECRETS[0]!.value),
        latin1(`${CRLF}${CRLF}{}`),
      ]),
    expect: { code: 'network' },
  },
}

async function startHostileTarget(): Promise<{
  url: string
  requests: ReceivedRequest[]
  close(): Promise<void>
}> {
  const requests: ReceivedRequest[] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buffered = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      const end = buffered.indexOf('\r\n\r\n')
      if (end < 0) return
      const [requestLine = '', ...lines] = buffered.subarray(0, end).toString('latin1').split(CRLF)
      buffered = Buffer.alloc(0)
      const headers: Record<string, string> = {}
      for (const line of lines) {
        const colon = line.indexOf(':')
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
      }
      const path = requestLine.split(' ')[1] ?? ''
      requests.push({ path, headers })
      const mode = MODES[path.split('/').at(-1) ?? '']
      socket.end(mode ? mode.answer() : response(404, '{}'))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

// ---------------------------------------------------------------------------------------------------------

let db: TestDatabase
let app: FastifyInstance
let target: Awaited<ReturnType<typeof startHostileTarget>>
const logLines: string[] = []

before(async () => {
  db = await createTestDatabase()
  target = await startHostileTarget()
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk))
      done()
    },
  })
  // As production builds it (loggerOptions, redaction included), logging everything at trace into memory.
  app = await buildApp({
    config: {
      connectionString: db.connectionString,
      dbPoolMax: testPoolMax(db.kind),
      bodyLimitBytes: 1024 * 1024,
      rateLimitPerMinute: 0,
      probeAllowedHosts: [],
      probeAllowPrivate: true,
      probeEnv: PROBE_ENV,
    },
    signingKey: await newSigningKey(),
    logger: { ...loggerOptions({ logLevel: 'trace' }), stream },
  })
})
after(async () => {
  await app?.close()
  await target?.close()
  await db?.stop()
})

describe('probe header secrets', () => {
  it('the leak search finds a secret in any of its spellings (control)', () => {
    for (const secret of SECRETS) {
      for (const [spelling, text] of spellings(secret)) {
        assert.ok(leaksIn([['control', `…${text}…`]]).length > 0, `${secret.env} ${spelling}`)
      }
    }
  })

  it('appear in no response, manifest, audit record, stored row or log line, in any spelling', async () => {
    const bodies: Array<[string, string]> = []
    const keyFor = async (role: 'admin' | 'orchestrator' | 'ops', ids?: string[]) =>
      (await createApiKey({ db: app.db }, { role, orchestrator_ids: ids, label: 'probe secrets' }, 'system')).key
    const admin = await keyFor('admin')
    const orchestrator = await keyFor('orchestrator', ['orch-a', 'orch-b'])
    const ops = await keyFor('ops')
    const send = async (key: string, options: InjectOptions) => {
      const answer = await app.inject({ ...options, headers: { authorization: `Bearer ${key}` } })
      bodies.push([`${options.method} ${options.url} → ${answer.statusCode}`, answer.body])
      return answer
    }
    const register = async (headers: Record<string, unknown>) => {
      const registered = await send(admin, {
        method: 'POST',
        url: '/v1/probes',
        payload: {
          name: 'hostile-ledger',
          request: { url: `${target.url}/refunds/{{params.mode}}`, headers },
          timeout_ms: 2_000,
          predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
        },
      })
      assert.equal(registered.statusCode, 201, registered.body)
      return registered.json().probe_id as string
    }
    const sendable = await register({
      ...Object.fromEntries(SENDABLE.map((secret, i) => [`x-secret-${i}`, { env: secret.env }])),
      'x-plain': 'not a secret',
    })
    const unsendable = await Promise.all(
      SECRETS.filter((s) => !s.sendable).map((s) => register({ authorization: { env: s.env } })),
    )

    // Dry runs: every mode for the probe whose secrets can be sent; the others fail before any request.
    const runs: Array<{ probeId: string; mode: string; expect: { code: string | null; result?: string } }> = [
      ...Object.entries(MODES).map(([mode, { expect }]) => ({ probeId: sendable, mode, expect })),
      ...unsendable.map((probeId) => ({ probeId, mode: 'pointer-0', expect: { code: 'secret_missing' } })),
    ]
    for (const { probeId, mode, expect } of runs) {
      const run = await send(admin, {
        method: 'POST',
        url: `/v1/probes/${probeId}/dry-run`,
        payload: { params: { mode } },
      })
      assert.equal(run.statusCode, 200, run.body)
      assert.equal(run.json().error?.code ?? null, expect.code, `${mode}: ${run.body}`)
      if (expect.result) assert.equal(run.json().result, expect.result)
    }
    const received = target.requests.length
    assert.equal(
      received,
      Object.keys(MODES).length,
      'only the probe with sendable secrets reached the target',
    )
    for (const request of target.requests) {
      for (const [i, secret] of SENDABLE.entries()) {
        assert.equal(request.headers[`x-secret-${i}`], secret.value, `${secret.env} was sent as set`)
      }
    }

    // Real evaluations: the same executions, each signed into a manifest and told in an outcome's story.
    const outcomeIds: string[] = []
    for (const { probeId, mode, expect } of runs) {
      const created = await send(orchestrator, {
        method: 'POST',
        url: '/v1/outcomes',
        payload: {
          subagent_id: 'refund-agent',
          run_id: uniqueRun('secrets'),
          evidence: EVIDENCE,
          arbiter_orchestrator_id: 'orch-a',
          probe: { probe_id: probeId, params: { mode } },
        },
      })
      assert.equal(created.statusCode, 201, created.body)
      const id = created.json().outcome_id as string
      outcomeIds.push(id)
      for (const [orchestratorId, reading] of [
        ['orch-a', 'success'],
        ['orch-b', 'failure'],
      ] as const) {
        const interpreted = await send(orchestrator, {
          method: 'POST',
          url: `/v1/outcomes/${id}/interpretations`,
          payload: {
            orchestrator_id: orchestratorId,
            outcome_interpretation: reading,
            success_criterion: CRITERION,
          },
        })
        assert.equal(interpreted.statusCode, 201, interpreted.body)
      }
      const evaluated = await send(orchestrator, { method: 'POST', url: `/v1/outcomes/${id}/evaluate` })
      assert.equal(evaluated.statusCode, 200, evaluated.body)
      const groundTruth = evaluated.json().manifest.ground_truth_arbiter_predicate
      assert.equal(groundTruth.error?.code ?? null, expect.code, `${mode}: ${evaluated.body}`)
    }
    assert.equal(target.requests.length, 2 * received, 'each evaluation ran its probe once')

    // Everything that can be read back.
    for (const id of outcomeIds) {
      await send(orchestrator, { method: 'GET', url: `/v1/outcomes/${id}` })
      await send(ops, { method: 'GET', url: `/v1/audit/outcomes/${id}` })
    }
    for (const list of ['/v1/manifests', '/v1/audit/records']) {
      let cursor: string | null = null
      do {
        const page = await send(ops, {
          method: 'GET',
          url: `${list}?limit=500${cursor ? `&cursor=${cursor}` : ''}`,
        })
        assert.equal(page.statusCode, 200, page.body)
        cursor = page.json().next_cursor
      } while (cursor)
    }
    const exported = await app.inject({
      method: 'GET',
      url: '/v1/audit/records',
      headers: { authorization: `Bearer ${ops}`, accept: 'application/x-ndjson' },
    })
    bodies.push(['audit export', exported.body])
    assert.ok(exported.body.includes('"probe.executed"'), 'the export holds the probe executions')
    await send(admin, { method: 'GET', url: '/v1/probes' })
    await send(admin, { method: 'GET', url: '/metrics' })

    // Signed payloads are base64url: decode them, so a secret inside one is found.
    const payloads: Array<[string, string]> = []
    for (const [where, body] of bodies) {
      for (const match of body.matchAll(/"jws":"[\w-]+\.([\w-]+)\.[\w-]+"/g)) {
        payloads.push([`JWS payload in ${where}`, Buffer.from(match[1]!, 'base64url').toString('utf8')])
      }
    }
    assert.ok(payloads.length >= runs.length, `signed manifests were read back (${payloads.length})`)

    // Every stored row, whatever the table.
    const rows: Array<[string, string]> = []
    const { rows: tables } = await app.db.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables
       WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
    )
    for (const { name } of tables) {
      const { rows: stored } = await app.db.query<{ row: string }>(
        `SELECT t::text AS row FROM "${name.replace(/"/g, '""')}" t`,
      )
      for (const { row } of stored) rows.push([`a row of ${name}`, row])
    }
    assert.ok(rows.some(([where]) => where === 'a row of audit_records'))

    const logs = logLines.map((line, i): [string, string] => [`log line ${i}`, line])
    assert.ok(logs.length > 100, `trace logging was captured (${logs.length} lines)`)
    const leaks = leaksIn([...bodies, ...payloads, ...rows, ...logs])
    assert.deepEqual(leaks, [], `${leaks.length} leak(s)`)
  })
})
