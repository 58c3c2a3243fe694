import { setTimeout as sleep } from 'node:timers/promises'
import { activeApiKeyHashes } from '../db/repositories/api-keys.ts'
import { queryRows } from '../db/statement.ts'
import type { ServiceContext } from './context.ts'

/** Loads start at least this far apart: a flood of misses costs the database one query per interval per replica. */
const RELOAD_INTERVAL_MS = 1000

/**
 * The hashes of every active key, read in one query and shared by every request: what an address that keeps
 * guessing keys is checked against instead of a lookup per key (src/http/plugins/app/auth.ts), so its guesses cost
 * the database at most one query per second while a valid key, even one created a moment ago on another replica,
 * still gets through.
 *
 * A hash that is not in the set is checked again against a load that started after it was asked about: a key
 * created before its request was sent is then in the set. Loads are single-flight and start at least
 * RELOAD_INTERVAL_MS apart, one at a time: a miss on an older set reloads at once, a miss on a younger one waits
 * for the next load, and every miss waiting meanwhile shares it. Memory is the active keys, plus one waiter per
 * request waiting for a load. The wait holds no admission slot (the caller asks for one only to look a key up once
 * it is known to be active), so waiting requests cost no database connection; each waits for one load: for it to
 * start (RELOAD_INTERVAL_MS after the one before at most, once that one has ended) and for its query.
 */
export class KnownKeys {
  private hashes = new Set<string>()
  /** When the latest load started (the set holds every key active then); -Infinity before the first. */
  private lastStart = Number.NEGATIVE_INFINITY
  /** The load not yet started that every miss from now on waits for (null: none asked for yet). */
  private pending: Promise<void> | null = null
  /** The load in flight, if any (settled otherwise). */
  private running: Promise<void> = Promise.resolve()

  /** `ctx.db` is read at each load, not kept. */
  constructor(
    private readonly ctx: Pick<ServiceContext, 'db'>,
    private readonly now: () => number = performance.now.bind(performance),
  ) {}

  /**
   * Whether `keyHash` names an active key, as far as a load started after this call can tell (a hash in the set
   * answers at once). Rejects when that load fails, as a lookup of the key would.
   */
  async has(keyHash: string): Promise<boolean> {
    if (this.hashes.has(keyHash)) return true
    await this.nextLoad()
    return this.hashes.has(keyHash)
  }

  /** The key behind `keyHash` turned out not active (revoked since the load): the next use of it is a miss. */
  forget(keyHash: string): void {
    this.hashes.delete(keyHash)
  }

  private nextLoad(): Promise<void> {
    this.pending ??= this.load()
    return this.pending
  }

  private async load(): Promise<void> {
    // A timer may fire a little early by this clock: loads must still start RELOAD_INTERVAL_MS apart.
    for (let wait = this.waitBeforeLoad(); wait > 0; wait = this.waitBeforeLoad()) await sleep(wait)
    await this.running.catch(() => {})
    // From here on a miss asks for the load after this one: this one may have started before its key existed.
    this.pending = null
    this.lastStart = this.now()
    const run = queryRows(this.ctx.db, activeApiKeyHashes()).then((rows) => {
      this.hashes = new Set(rows.map((row) => row.key_hash))
    })
    this.running = run
    await run
  }

  private waitBeforeLoad(): number {
    return this.lastStart + RELOAD_INTERVAL_MS - this.now()
  }
}
