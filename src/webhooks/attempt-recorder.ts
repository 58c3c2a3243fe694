import type { Queryable } from '../db/pool.ts'
import { queryRows } from '../db/statement.ts'
import { type AttemptRecord, attemptsRecord } from './repository.ts'

/** An attempt's answer once stored: whether its webhook is failing (a success then ends the streak). */
export interface RecordedAttempt {
  webhookFailing: boolean
}

interface Waiting extends AttemptRecord {
  resolve(recorded: RecordedAttempt | undefined): void
  reject(err: unknown): void
}

/** Attempts one statement records at most. */
const BATCH_MAX = 64

/**
 * Records the delivery worker's attempts in batches: the answers that come in the same turn of the event loop, or
 * while the previous batch is being written, go to the database in one statement (`attemptsRecord`), each still
 * only under its own lease. A worker with 16 attempts in flight against quick receivers would otherwise spend a
 * round trip, and a transaction, on every answer; an answer that comes alone waits for nothing. One batch is
 * written at a time.
 */
export class AttemptRecorder {
  readonly #db: Queryable
  #waiting: Waiting[] = []
  #scheduled = false
  #writing = false

  constructor(db: Queryable) {
    this.#db = db
  }

  /**
   * Stores an attempt's answer. Resolves once its batch is written: undefined when its lease was no longer the
   * delivery's (the answer is dropped); rejects when the batch could not be written (the lease then passes and
   * the delivery is attempted again).
   */
  record(attempt: AttemptRecord): Promise<RecordedAttempt | undefined> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ ...attempt, resolve, reject })
      if (this.#writing || this.#scheduled) return
      this.#scheduled = true
      setImmediate(() => this.#write())
    })
  }

  #write(): void {
    this.#scheduled = false
    const batch = this.#waiting.splice(0, BATCH_MAX)
    this.#writing = true
    queryRows(this.#db, attemptsRecord(batch))
      .then(
        (rows) => {
          const recorded = new Map(rows.map((row) => [`${row.id}/${row.lease_token}`, row]))
          for (const attempt of batch) {
            const row = recorded.get(`${attempt.claimed.id}/${attempt.claimed.lease_token}`)
            attempt.resolve(row === undefined ? undefined : { webhookFailing: row.webhook_failing })
          }
        },
        (err: unknown) => {
          for (const attempt of batch) attempt.reject(err)
        },
      )
      .finally(() => {
        this.#writing = false
        // Those that came while this batch was written have waited a round trip already: theirs goes now.
        if (this.#waiting.length > 0) this.#write()
      })
  }
}
