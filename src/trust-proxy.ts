import ipaddr from 'ipaddr.js'

/**
 * Which peers may name the client in `X-Forwarded-For` (fastify's `trustProxy`). Off by default: the client
 * address is the socket's. Behind a reverse proxy every request then comes from the proxy's address, and
 * everything counted per client address (failed authentication first of all) is shared by all clients.
 *
 * - `true`: trust every peer; the client is the leftmost address of `X-Forwarded-For`. A client that reaches
 *   Arbiter directly, or through a proxy that appends to a header the client sent, chooses its own address.
 * - a list of addresses and CIDRs (and proxy-addr's names `loopback`, `linklocal`, `uniquelocal`): the client is
 *   the nearest address in the chain that is not one of them, so a client cannot forge it.
 *
 * A number of hops is refused: fastify 5 ignores hop counts (it cannot check the nearest peer by a count), so it
 * would silently trust nothing.
 */
export type TrustProxy = boolean | string[]

const NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

const EXPECTED =
  'expected true, false, or a comma list of the proxies’ addresses or CIDRs (e.g. 10.0.0.0/8,192.0.2.7)'

/** An IPv4 address in four decimal parts or an IPv6 address, optionally with a prefix length (1 to 32 or 128). */
function isAddressOrRange(entry: string): boolean {
  if (NAMES.has(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  if (rest.length > 0) return false
  const bits = ipaddr.IPv4.isValidFourPartDecimal(address) ? 32 : ipaddr.IPv6.isValid(address) ? 128 : 0
  if (bits === 0) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= bits)
}

/** ARBITER_TRUST_PROXY as fastify takes it, or why it is refused (a message naming the value at fault). */
export function parseTrustProxy(value: string): { trustProxy: TrustProxy } | { problem: string } {
  const text = value.trim()
  if (text === 'true') return { trustProxy: true }
  if (text === 'false') return { trustProxy: false }
  if (/^\d+$/.test(text)) {
    return {
      problem: `a number of hops is not supported (fastify cannot check the nearest proxy by a count); ${EXPECTED}`,
    }
  }
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
  if (entries.length === 0) return { problem: EXPECTED }
  const wrong = entries.find((entry) => !isAddressOrRange(entry))
  if (wrong !== undefined)
    return { problem: `${JSON.stringify(wrong)} is not an address or CIDR; ${EXPECTED}` }
  return { trustProxy: entries }
}
