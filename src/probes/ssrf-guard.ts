import { promises as dns } from 'node:dns'
import { createRequire } from 'node:module'
import net from 'node:net'
import tls from 'node:tls'
import ipaddr from 'ipaddr.js'
import type { Agent, buildConnector } from 'undici'
import { replaceTemplates, validateProbeTemplate } from './url-template.ts'

// undici (with its fetch, cache and WebSocket code: megabytes of memory) is loaded when a probe first runs, not
// when the service starts: most deployments never run one. It is CommonJS, so it loads synchronously.
let undici: typeof import('undici') | undefined
export function loadUndici(): typeof import('undici') {
  undici ??= createRequire(import.meta.url)('undici') as typeof import('undici')
  return undici
}

/**
 * The SSRF guard for ground-truth probes.
 *
 * A probe URL is admin-supplied and partly caller-supplied (templates), so every
 * request Arbiter makes on its behalf is vetted at three points:
 *   1. the URL (scheme, host allowlist, IP literals in any notation) before dispatch;
 *   2. inside the undici connector, before any socket exists: IP literals are checked
 *      directly (undici never calls `connect.lookup` for literals), names are resolved
 *      to ALL their A/AAAA addresses and refused if any one is not allowed, and the
 *      socket is opened to a vetted address, never to the name (no second lookup an
 *      attacker's DNS could answer differently);
 *   3. after connect, the socket's actual remote address is checked again.
 * Names that are loopback by definition (`localhost`, `*.localhost`, RFC 6761) never reach DNS: they
 * are loopback addresses, refused or connected to exactly like `127.0.0.1`.
 *
 * Every refusal names the way out, so an operator is not left guessing which setting applies.
 */

export interface SsrfPolicy {
  /** Host patterns: exact names (case-insensitive), `*.example.com` (subdomains only), IP literals. Empty = any host. */
  allowedHosts: string[]
  /** `ARBITER_PROBE_ALLOW_PRIVATE=true`: any address may be contacted; the host allowlist still applies. */
  allowPrivate: boolean
  /** The variables a refusal tells the operator to set, and who is refused; default: the probes'. */
  settings?: SsrfSettingNames
}

export interface SsrfSettingNames {
  allowedHosts: string
  allowPrivate: string
  /** Who the guard protects, in messages: "probes", "webhooks". */
  users: string
}

const PROBE_SETTINGS: SsrfSettingNames = {
  allowedHosts: 'ARBITER_PROBE_ALLOWED_HOSTS',
  allowPrivate: 'ARBITER_PROBE_ALLOW_PRIVATE',
  users: 'probes',
}

/** Raised when the guard refuses a destination. `connected` is true only for the post-connect re-check. */
export class SsrfBlockedError extends Error {
  override name = 'SsrfBlockedError'
  readonly code = 'ARBITER_SSRF_BLOCKED'
  readonly connected: boolean

  constructor(message: string, connected = false) {
    super(message)
    this.connected = connected
  }
}

export type HostLookup = (hostname: string) => Promise<Array<{ address: string; family: number }>>

const defaultLookup: HostLookup = (hostname) => dns.lookup(hostname, { all: true })

/** The settings a refusal names as its way out: the probes' own, or those of another caller of the guard. */
function wayOut(policy: SsrfPolicy) {
  const names = policy.settings ?? PROBE_SETTINGS
  return {
    notPublic: (what: string) =>
      `${what} is not a public unicast address; on a trusted network set ${names.allowPrivate}=true (with ${names.allowedHosts} to limit ${names.users} to the hosts you trust)`,
    notAllowedHost: (host: string) =>
      `host ${host} is not in the allowed hosts; add it to ${names.allowedHosts} to let ${names.users} reach it`,
  }
}

// What a loopback name stands for: the addresses are vetted like any other, so the policy still decides.
const LOOPBACK_ANSWERS = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
]

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
}

// Not an allocated global unicast block, or mapping/translating to IPv4 in a way
// ipaddr.js classifies as 'unicast'. `::/96` is the deprecated IPv4-compatible block:
// `::7f00:1` reaches 127.0.0.1 on some stacks.
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96')
// Only 2000::/3 is allocated as global unicast; everything outside it is IANA-reserved.
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3')

/**
 * True only for a plain IPv4 or IPv6 address in ipaddr.js's 'unicast' range, i.e. not
 * loopback, private, link-local, CGNAT, ULA, multicast, broadcast, unspecified,
 * reserved/benchmarking/documentation, IPv4-mapped or -compatible, NAT64, 6to4 or
 * Teredo. Anything that is not an address in canonical notation is not public: this
 * function never guesses (non-canonical notations are normalized by `new URL()` first).
 */
export function isPublicUnicast(address: string): boolean {
  const text = stripBrackets(address)
  if (net.isIP(text) === 0) return false
  let ip: ipaddr.IPv4 | ipaddr.IPv6
  try {
    ip = ipaddr.parse(text)
  } catch {
    return false
  }
  if (ip.range() !== 'unicast') return false
  if (ip instanceof ipaddr.IPv6) {
    if (ip.match(IPV4_COMPATIBLE)) return false
    if (!ip.match(IPV6_GLOBAL_UNICAST)) return false
  }
  return true
}

/**
 * Whether `hostname` is loopback by definition: `localhost` or a name under it, any case, with or without
 * trailing dots (a name written `localhost.` is the same name, and must not slip past as an unknown one).
 */
export function isLoopbackName(hostname: string): boolean {
  const host = stripBrackets(hostname.trim().toLowerCase()).replace(/\.+$/, '')
  return host === 'localhost' || host.endsWith('.localhost')
}

/** Whether the guard lets a socket be opened to `address` (an IP address) under `policy`. */
export function addressAllowed(address: string, policy: SsrfPolicy): boolean {
  const text = stripBrackets(address)
  if (net.isIP(text) === 0) return false
  return policy.allowPrivate || isPublicUnicast(text)
}

/** Lower-case, no brackets, no trailing dot; IP literals in ipaddr.js's canonical form. */
function canonicalHost(hostname: string): string {
  let host = stripBrackets(hostname.trim().toLowerCase())
  if (host.endsWith('.')) host = host.slice(0, -1)
  if (net.isIP(host) !== 0) return ipaddr.parse(host).toString()
  return host
}

/**
 * A pattern normalized the way `new URL()` normalizes hosts (so `127.1` means
 * 127.0.0.1 and IDNs are compared in punycode), or null when it is not a bare host —
 * ports, paths and credentials are not part of a pattern, and such a pattern matches nothing.
 */
function canonicalPattern(pattern: string): string | null {
  const text = pattern.trim()
  if (text === '') return null
  const host = net.isIPv6(text) ? `[${text}]` : text
  let parsed: URL
  try {
    parsed = new URL(`http://${host}/`)
  } catch {
    return null
  }
  if (
    parsed.host !== parsed.hostname ||
    parsed.pathname !== '/' ||
    parsed.search !== '' ||
    parsed.username !== ''
  ) {
    return null
  }
  return canonicalHost(parsed.hostname)
}

/**
 * Why `pattern` is not a host pattern the allowlist can match — an exact name (`ledger.example.com`), subdomains
 * of one (`*.example.com`) or an IP literal, without scheme, port, path or credentials — or null when it is one.
 * The configuration refuses such an entry at start: it would match nothing, and every probe would be refused
 * with no sign of why.
 */
export function hostPatternProblem(pattern: string): string | null {
  const text = pattern.trim()
  const shown = JSON.stringify(text)
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    let host = ''
    try {
      host = new URL(text).hostname
    } catch {}
    return host === ''
      ? `${shown} is a URL, not a host`
      : `${shown} is a URL, not a host (write its host: ${stripBrackets(host)})`
  }
  const name = text.startsWith('*.') ? text.slice(2) : text
  if (name.includes('*')) return `${shown}: "*" only as a leading "*." (subdomains of a name)`
  const host = canonicalPattern(name)
  if (host === null) return `${shown} is not a bare host (no port, path or credentials)`
  if (name !== text && net.isIP(host) !== 0) return `${shown}: "*." takes a name, not an IP address`
  return null
}

/**
 * Whether `hostname` matches the allowlist: exact names case-insensitively,
 * `*.example.com` for subdomains of example.com only (not example.com itself, never an
 * IP), IP literals after normalization. An empty list allows any host.
 */
export function hostAllowed(hostname: string, policy: SsrfPolicy): boolean {
  if (policy.allowedHosts.length === 0) return true
  const host = canonicalHost(hostname)
  const hostIsIp = net.isIP(host) !== 0
  return policy.allowedHosts.some((pattern) => {
    const trimmed = pattern.trim()
    if (trimmed.startsWith('*.')) {
      const parent = canonicalPattern(trimmed.slice(2))
      if (parent === null || hostIsIp || net.isIP(parent) !== 0) return false
      return host.endsWith(`.${parent}`)
    }
    return canonicalPattern(trimmed) === host
  })
}

/**
 * The execution-time URL check (guard point 1): null when `url` may be dispatched,
 * else the reason. Host names are only resolved later, inside the connector.
 */
export function checkRequestUrl(url: URL, policy: SsrfPolicy): string | null {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'url scheme must be http or https'
  const host = stripBrackets(url.hostname)
  if (!hostAllowed(host, policy)) return wayOut(policy).notAllowedHost(host)
  if (net.isIP(host) !== 0 && !addressAllowed(host, policy))
    return wayOut(policy).notPublic(`address ${host}`)
  if (isLoopbackName(host) && !policy.allowPrivate)
    return wayOut(policy).notPublic(`host ${host} is a loopback name and`)
  return null
}

/**
 * The registration-time check: a host that is a non-public IP literal or a loopback name is refused
 * unless private addresses are allowed, and a host outside the allowlist is refused. `new URL()` has
 * already normalized every IPv4 notation (`127.1`, `2130706433`, `0x7f.1`, `017700000001`) to dotted
 * decimal, so an IP literal is recognized however it was written. Templates never sit in the host, so
 * the host checked here is the host every execution uses; other names are resolved at every execution.
 */
export function checkRegistrationUrl(url: string, policy: SsrfPolicy): string | null {
  const invalid = validateProbeTemplate(url)
  if (invalid !== null) return invalid
  return checkRequestUrl(new URL(replaceTemplates(url, () => 'x')), policy)
}

/**
 * Guard point 2: the addresses a socket may be opened to for `hostname`, or a thrown
 * `SsrfBlockedError`. IP literals are checked as they are and never looked up; loopback
 * names stand for 127.0.0.1 and ::1 and are never looked up either; other names are
 * resolved to all their addresses and refused when any one is not allowed (an
 * attacker who controls one record must not win by ordering).
 */
export async function vetHost(
  hostname: string,
  policy: SsrfPolicy,
  lookup: HostLookup = defaultLookup,
): Promise<Array<{ address: string; family: number }>> {
  const host = stripBrackets(hostname)
  if (!hostAllowed(host, policy)) throw new SsrfBlockedError(wayOut(policy).notAllowedHost(host))
  const family = net.isIP(host)
  if (family !== 0) {
    if (!addressAllowed(host, policy)) throw new SsrfBlockedError(wayOut(policy).notPublic(`address ${host}`))
    return [{ address: host, family }]
  }
  if (isLoopbackName(host)) {
    if (!policy.allowPrivate)
      throw new SsrfBlockedError(wayOut(policy).notPublic(`host ${host} is a loopback name and`))
    return LOOPBACK_ANSWERS.map((answer) => ({ ...answer }))
  }
  const answers = await lookup(host)
  if (answers.length === 0) throw Object.assign(new Error(`${host} has no addresses`), { code: 'ENOTFOUND' })
  const refused = answers.find((answer) => !addressAllowed(answer.address, policy))
  if (refused !== undefined) {
    throw new SsrfBlockedError(wayOut(policy).notPublic(`${host} resolves to ${refused.address}, which`))
  }
  return answers
}

/**
 * Guard point 3: throws `SsrfBlockedError` unless the connected socket's remote
 * address is allowed. The socket was opened to a vetted address, so this only fires if
 * something between us and the kernel disagrees — which is exactly when it must.
 */
export function assertAllowedRemoteAddress(
  socket: { remoteAddress?: string | undefined },
  policy: SsrfPolicy,
): void {
  const remote = socket.remoteAddress
  if (remote === undefined || remote === '') {
    throw new SsrfBlockedError('connected socket has no remote address', true)
  }
  if (!addressAllowed(remote, policy)) {
    throw new SsrfBlockedError(wayOut(policy).notPublic(`connected to ${remote}, which`), true)
  }
}

export interface GuardedDispatcherOptions {
  /** Resolver for host names; defaults to `dns.promises.lookup(host, {all: true})`. Injected by tests. */
  lookup?: HostLookup
  /** Bound on opening one socket (TCP + TLS handshake). Default 10 s; the runner's per-attempt timer is usually shorter. */
  connectTimeoutMs?: number
}

/** An undici `connect` function enforcing guard points 2 and 3. */
export function createGuardedConnector(
  policy: SsrfPolicy,
  opts: GuardedDispatcherOptions = {},
): buildConnector.connector {
  const lookup = opts.lookup ?? defaultLookup
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000

  return (options, callback) => {
    let settled = false
    const settle = (...args: [null, net.Socket] | [Error, null]) => {
      if (settled) return
      settled = true
      callback(...args)
    }
    if (
      options.httpSocket !== undefined ||
      (options.socketPath !== undefined && options.socketPath !== null)
    ) {
      settle(new SsrfBlockedError('probe connections may not reuse sockets or use socket paths'), null)
      return
    }
    const secure = options.protocol === 'https:'
    const port = Number(options.port) || (secure ? 443 : 80)
    const hostname = stripBrackets(options.hostname)
    // SNI and certificate checks use the name, while the socket goes to the vetted address.
    const servername = options.servername || (net.isIP(hostname) === 0 ? hostname : undefined)

    const tryAddress = (addresses: Array<{ address: string }>, index: number) => {
      const target = addresses[index]
      if (target === undefined) return
      const socket: net.Socket = secure
        ? tls.connect({ host: target.address, port, servername, ALPNProtocols: ['http/1.1'] })
        : net.connect({ host: target.address, port })
      const timer = setTimeout(() => {
        socket.destroy()
        settle(
          new (loadUndici().errors.ConnectTimeoutError)(`connect timeout after ${connectTimeoutMs} ms`),
          null,
        )
      }, connectTimeoutMs)
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer)
        try {
          assertAllowedRemoteAddress(socket, policy)
        } catch (err) {
          socket.destroy()
          settle(err as Error, null)
          return
        }
        socket.setNoDelay(true)
        socket.setKeepAlive(true, 60_000)
        settle(null, socket)
      })
      socket.once('error', (err) => {
        clearTimeout(timer)
        if (settled) return
        // Every address in the list was vetted, so falling back (e.g. AAAA unreachable) is safe.
        if (index + 1 < addresses.length) tryAddress(addresses, index + 1)
        else settle(err, null)
      })
    }

    vetHost(hostname, policy, lookup).then(
      (addresses) => tryAddress(addresses, 0),
      (err: unknown) => settle(err instanceof Error ? err : new Error(String(err)), null),
    )
  }
}

/** An undici Agent whose every connection passes the SSRF guard. */
export function createGuardedDispatcher(policy: SsrfPolicy, opts: GuardedDispatcherOptions = {}): Agent {
  return new (loadUndici().Agent)({ connect: createGuardedConnector(policy, opts) })
}
