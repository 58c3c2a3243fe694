import { randomUUID } from 'node:crypto'
import { type KeyListener, listenForKeyChanges } from '../db/repositories/api-keys.ts'
import type { Role } from '../domain/vocabulary.ts'

/**
 * Active API keys remembered by the hash of their secret, so an authenticated read is one database round trip
 * (its own query) instead of two. Revocation must still bite on the very next request on every replica:
 *
 * - `listen` (several replicas on one PostgreSQL): a dedicated connection LISTENs on the key channel. A revocation
 *   NOTIFYs in its own transaction; every cache clears itself when it hears it and acks. The cache serves only
 *   while it is provably up to date: it sends itself a heartbeat every HEARTBEAT_MS and serves only while the
 *   echo of one sent less than FRESH_MS ago has come back (notifications arrive in commit order, so that cache
 *   has heard every revocation committed before the heartbeat). The revoker waits, after its commit, until every
 *   listening cache has acked, or FRESH_MS has passed: after that, any cache that still serves has heard it.
 *   While the connection is down, the cache does not serve (every request reads the key), and it reconnects.
 * - `local` (the embedded database: one process): revocations in this process clear every local cache directly.
 * - `off`: no cache; every request reads its key.
 */
export type KeyCacheMode = 'listen' | 'local' | 'off'

export interface CachedPrincipal {
  keyId: string
  role: Role
  orchestratorIds: string[]
}

const HEARTBEAT_MS = 250
/** A cache serves only while the echo of a heartbeat sent less than this ago has come back. */
export const FRESH_MS = 1500
const RECONNECT_MS = 1000
const MAX_ENTRIES = 10_000

/** Caches that hear of revocations only from this process: 'local' and 'off' (a 'listen' cache hears its own NOTIFY). */
const inProcessCaches = new Set<KeyCache>()

/**
 * A key was revoked in this process (null: a revocation may have been): clears every local cache of this process
 * (the embedded database's case) and tells the revocation listeners of every cache that hears of revocations only
 * from here.
 */
export function keyRevokedInProcess(keyId: string | null): void {
  for (const cache of inProcessCaches) {
    if (keyId === null) cache.invalidate()
    else cache.revoked(keyId)
  }
}

/** Told that a key was revoked: its id, or null when a replica announced a revocation without naming the key. */
export type RevocationListener = (keyId: string | null) => void

interface AckWaiter {
  needed: number
  got: number
  done: () => void
}

export class KeyCache {
  readonly mode: KeyCacheMode
  private readonly entries = new Map<string, CachedPrincipal>()
  private generationValue = 0
  private listener: KeyListener | null = null
  private readonly instance = randomUUID()
  private probeSeq = 0
  private readonly probesSent = new Map<number, number>()
  /** performance.now() when the last heartbeat that came back was sent. */
  private freshSince = Number.NEGATIVE_INFINITY
  private readonly waiters = new Map<string, AckWaiter>()
  private heartbeat: NodeJS.Timeout | null = null
  private reconnect: NodeJS.Timeout | null = null
  private closed = false
  private readonly revocationListeners = new Set<RevocationListener>()

  constructor(
    mode: KeyCacheMode,
    private readonly options: { connectionString?: string; warn?: (message: string) => void } = {},
  ) {
    this.mode = mode
  }

  /** Starts listening (listen mode; the cache serves once its first heartbeat comes back). */
  start(): void {
    if (this.mode !== 'listen') inProcessCaches.add(this)
    if (this.mode === 'listen') void this.connect()
  }

  async close(): Promise<void> {
    this.closed = true
    inProcessCaches.delete(this)
    this.revocationListeners.clear()
    if (this.heartbeat) clearInterval(this.heartbeat)
    if (this.reconnect) clearTimeout(this.reconnect)
    this.invalidate()
    const listener = this.listener
    this.listener = null
    await listener?.close()
  }

  /** Whether lookups may be answered from memory right now. */
  get serving(): boolean {
    if (this.closed || this.mode === 'off') return false
    if (this.mode === 'local') return true
    return this.listener !== null && performance.now() - this.freshSince < FRESH_MS
  }

  /** Bumped by every invalidation: a key read before one must not be remembered after it. */
  get generation(): number {
    return this.generationValue
  }

  lookup(keyHash: string): CachedPrincipal | undefined {
    return this.serving ? this.entries.get(keyHash) : undefined
  }

  remember(keyHash: string, principal: CachedPrincipal, generation: number): void {
    if (generation !== this.generationValue || !this.serving) return
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(keyHash, principal)
  }

  invalidate(): void {
    this.generationValue++
    this.entries.clear()
  }

  /**
   * Calls `listener` whenever a key is revoked on any replica (this one included) that this cache hears of; what
   * holds a key's open streams closes them. Returns the function that stops listening.
   */
  onRevoked(listener: RevocationListener): () => void {
    this.revocationListeners.add(listener)
    return () => this.revocationListeners.delete(listener)
  }

  /** A revocation was heard (null: a key not named): forget every key, and tell the listeners. */
  revoked(keyId: string | null): void {
    this.invalidate()
    for (const listener of this.revocationListeners) listener(keyId)
  }

  /** Revocations whose acks are still being counted (0 once every revocation has returned, failed ones included). */
  get pendingRevocations(): number {
    return this.waiters.size
  }

  /** Starts counting acks of a revocation before it commits (acks may arrive before the revoker counts). */
  expectAcks(nonce: string): void {
    if (this.mode === 'listen')
      this.waiters.set(nonce, { needed: Number.POSITIVE_INFINITY, got: 0, done: () => {} })
  }

  /**
   * Waits until `listeners` caches have acked the revocation `nonce`, or FRESH_MS has passed (after which no cache
   * that missed it still serves). Without a listener of its own (or not serving), it just waits FRESH_MS.
   */
  async awaitAcks(nonce: string, listeners: number): Promise<void> {
    const waiter = this.waiters.get(nonce)
    try {
      if (listeners === 0) return
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FRESH_MS)
        if (!waiter || !this.listener) return
        waiter.needed = listeners
        waiter.done = () => {
          clearTimeout(timer)
          resolve()
        }
        if (waiter.got >= waiter.needed) waiter.done()
      })
    } finally {
      this.waiters.delete(nonce)
    }
  }

  private async connect(): Promise<void> {
    if (this.closed) return
    try {
      const listener = await listenForKeyChanges(this.options.connectionString!, {
        onMessage: (payload) => this.onMessage(payload),
        onLost: (err) => this.lost(err),
      })
      if (this.closed) {
        await listener.close()
        return
      }
      // Whatever was revoked while no one listened: start empty, and have what holds open streams read their
      // keys again (a revocation announced meanwhile was never heard here).
      this.revoked(null)
      this.listener = listener
      this.heartbeat = setInterval(() => this.sendHeartbeat(), HEARTBEAT_MS)
      this.heartbeat.unref()
      this.sendHeartbeat()
    } catch (err) {
      this.lost(err as Error)
    }
  }

  private sendHeartbeat(): void {
    const listener = this.listener
    if (!listener) return
    const seq = ++this.probeSeq
    this.probesSent.set(seq, performance.now())
    listener.notify(`probe:${this.instance}:${seq}`).catch(() => {})
  }

  private onMessage(payload: string): void {
    const [type, a, b] = payload.split(':')
    if (type === 'revoke') {
      // `revoke:<nonce>:<key id>`; a replica of an earlier version sends `revoke:<nonce>` alone.
      this.revoked(b ?? null)
      this.listener?.notify(`ack:${a}`).catch(() => {})
    } else if (type === 'ack') {
      const waiter = this.waiters.get(a!)
      if (waiter && ++waiter.got >= waiter.needed) waiter.done()
    } else if (type === 'probe' && a === this.instance) {
      const seq = Number(b)
      const sentAt = this.probesSent.get(seq)
      if (sentAt === undefined) return
      for (const key of this.probesSent.keys()) if (key <= seq) this.probesSent.delete(key)
      this.freshSince = Math.max(this.freshSince, sentAt)
    }
  }

  private lost(err: Error): void {
    this.invalidate()
    this.freshSince = Number.NEGATIVE_INFINITY
    this.probesSent.clear()
    if (this.heartbeat) clearInterval(this.heartbeat)
    this.heartbeat = null
    const listener = this.listener
    this.listener = null
    void listener?.close()
    if (this.closed) return
    this.options.warn?.(`key cache: listener lost (${err.message}); reading every key until it reconnects`)
    this.reconnect = setTimeout(() => {
      this.reconnect = null
      void this.connect()
    }, RECONNECT_MS)
    this.reconnect.unref()
  }
}
