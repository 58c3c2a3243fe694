import ipaddr from 'ipaddr.js'

/**
 * Failed authentication per client address: each request presenting a key that is unknown or revoked costs the
 * database a lookup, so an address that keeps guessing is answered 429 instead of 401 once it has failed `perMinute`
 * times in its window, until that window (a minute from its first failure) ends. Only failures are counted. Once
 * an address has used up its failures, its keys are not looked up one by one: they are checked against the active
 * keys first (src/http/plugins/app/auth.ts), so a valid key is never refused.
 *
 * An address is an IPv4 address or an IPv6 /64 (`addressKey`): one IPv6 client usually holds a whole /64, so
 * counting each IPv6 address apart would let it guess without limit from new addresses.
 *
 * Memory is bounded: at most MAX_ADDRESSES windows are kept; past that, expired windows are dropped first, then the
 * oldest, so a flood of addresses costs a fixed amount of memory (and forgets the oldest guessers first).
 */
const WINDOW_MS = 60_000
const MAX_ADDRESSES = 10_000

/**
 * The address `ip`'s failures are counted under: an IPv4 address as it is (also when written IPv4-mapped, as
 * `::ffff:a.b.c.d`), an IPv6 address as its /64 (`2001:db8:1:2::/64`). Anything else is kept as it is.
 */
export function addressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip
  const address = ipaddr.process(ip)
  if (address.kind() === 'ipv4') return address.toString()
  const parts = (address as ipaddr.IPv6).parts
  return `${new ipaddr.IPv6([...parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`
}

interface Window {
  startedAt: number
  failures: number
}

export class AuthFailureThrottle {
  /** Insertion order is window order: a window is re-inserted when it starts again. */
  private readonly windows = new Map<string, Window>()

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether throttling is on (a limit of 0 turns it off). */
  get enabled(): boolean {
    return this.perMinute > 0
  }

  /**
   * Counts one failed authentication from `ip` (under its `addressKey`). Returns null while the address is within
   * its limit (answer 401), or the seconds until its window ends once it is past it (answer 429 with that
   * Retry-After).
   */
  fail(ip: string): number | null {
    if (!this.enabled) return null
    const address = addressKey(ip)
    const now = this.now()
    let window = this.windows.get(address)
    if (!window || now - window.startedAt >= WINDOW_MS) {
      this.windows.delete(address)
      this.makeRoom(now)
      window = { startedAt: now, failures: 0 }
      this.windows.set(address, window)
    }
    window.failures += 1
    if (window.failures <= this.perMinute) return null
    return Math.max(1, Math.ceil((window.startedAt + WINDOW_MS - now) / 1000))
  }

  /**
   * The seconds until the window of `ip`'s `addressKey` ends once it has used up its failures (its next failure
   * would be answered 429), null otherwise. Counts nothing: the auth hook asks before looking a key up, so that a
   * throttled address's guesses cost no database lookup at all.
   */
  retryAfter(ip: string): number | null {
    if (!this.enabled) return null
    const window = this.windows.get(addressKey(ip))
    if (!window || window.failures < this.perMinute) return null
    const left = window.startedAt + WINDOW_MS - this.now()
    return left > 0 ? Math.max(1, Math.ceil(left / 1000)) : null
  }

  /** Addresses with a window kept (for tests of the bound). */
  get size(): number {
    return this.windows.size
  }

  private makeRoom(now: number): void {
    if (this.windows.size < MAX_ADDRESSES) return
    for (const [address, window] of this.windows) {
      if (now - window.startedAt < WINDOW_MS) break
      this.windows.delete(address)
    }
    if (this.windows.size >= MAX_ADDRESSES) this.windows.delete(this.windows.keys().next().value!)
  }
}
