import pg from 'pg'
import { type LatencySummary, summarize } from './load.ts'

/**
 * Sequencing lag under load, seen from outside the service: a connection of the bench polls audit_records every
 * POLL_MS for records past the last one it saw, and takes each new record's lag two ways:
 * - from its `at` (when it first saw it − the record's `at`, the time its change wrote it): an upper bound, which
 *   also holds the change's own time before it committed (waiting for a pool connection, running its statement);
 * - from its acknowledgement (when it first saw it − when the client had the 2xx answer of the request that wrote
 *   it, reported with `acknowledged`): what a client waits, after its write is acknowledged, until the write is in
 *   the log; 0 when it was there before the answer arrived. The change committed before its answer was sent, so
 *   this leaves out the moment between the two.
 * Both are upper bounds by up to one poll interval plus one query; Arbiter and the bench run on the same machine,
 * so they share a clock.
 */
const POLL_MS = 5

export interface SequencingLag {
  records: number
  lagMs: LatencySummary
  /** Records whose writing request was acknowledged to the bench (the decide path's three kinds). */
  acknowledgedRecords: number
  fromAcknowledgementMs: LatencySummary
  pollMs: number
}

/** The record a request of the decide path writes, as the sampler matches it with the request's answer. */
export function recordKey(kind: string, outcomeId: string, orchestratorId: string | null): string {
  return `${kind} ${outcomeId} ${orchestratorId ?? ''}`
}

export class SequencingLagSampler {
  private readonly client: pg.Client
  private lastSeq = 0
  private readonly lags: number[] = []
  private readonly ackLags: number[] = []
  /** Acknowledged writes whose record was not seen yet, and records seen before their acknowledgement. */
  private readonly acks = new Map<string, number>()
  private readonly seenFirst = new Set<string>()
  private running = false
  private loop: Promise<void> | null = null

  constructor(connectionString: string) {
    this.client = new pg.Client({ connectionString, application_name: 'bench-lag' })
  }

  /** Starts polling after the records written so far (the warm-up's, once they are all in the log). */
  async start(): Promise<void> {
    await this.client.connect()
    await this.caughtUp()
    const { rows } = await this.client.query<{ seq: string | null }>(
      'SELECT max(seq)::text AS seq FROM audit_records',
    )
    this.lastSeq = Number(rows[0]?.seq ?? 0)
    this.resume()
  }

  /**
   * Waits until no entry waits for the sequencer and, while polling, until the poll has seen every record: so
   * that a pause loses no record's lag to the time it lasts (at most `timeoutMs`, then throws).
   */
  async caughtUp(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const { rows } = await this.client.query<{ waiting: boolean; last: string | null }>(
        `SELECT EXISTS (SELECT 1 FROM audit_intake) AS waiting,
                (SELECT max(seq)::text FROM audit_records) AS last`,
      )
      const { waiting, last } = rows[0]!
      if (!waiting && (!this.running || this.lastSeq >= Number(last ?? 0))) return
      if (Date.now() > deadline) throw new Error(`the audit log did not catch up within ${timeoutMs} ms`)
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    }
  }

  /**
   * Stops polling until `resume` (while another server is measured, so that the sampler's queries load only the
   * windows it samples). Records written meanwhile would be seen, and counted, only when polling resumes: pause
   * once `caughtUp`, and while nothing is written to the log.
   */
  async pause(): Promise<void> {
    this.running = false
    await this.loop
    this.loop = null
  }

  resume(): void {
    if (this.running) return
    this.running = true
    this.loop = this.poll()
  }

  private async poll(): Promise<void> {
    while (this.running) {
      const started = Date.now()
      const { rows } = await this.client.query<{
        seq: string
        at_ms: string
        kind: string
        outcome_id: string | null
        orchestrator_id: string | null
      }>(
        `SELECT seq::text, (extract(epoch FROM at) * 1000)::float8::text AS at_ms, kind, outcome_id::text,
                orchestrator_id
         FROM audit_records WHERE seq > $1 ORDER BY seq LIMIT 5000`,
        [this.lastSeq],
      )
      const seen = Date.now()
      for (const row of rows) {
        this.lags.push(Math.max(0, seen - Number(row.at_ms)))
        this.lastSeq = Number(row.seq)
        if (row.outcome_id === null) continue
        const key = recordKey(row.kind, row.outcome_id, row.orchestrator_id)
        const acknowledged = this.acks.get(key)
        if (acknowledged === undefined) this.seenFirst.add(key)
        else {
          this.acks.delete(key)
          this.ackLags.push(Math.max(0, seen - acknowledged))
        }
      }
      const wait = POLL_MS - (Date.now() - started)
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    }
  }

  /** The client had the 2xx answer of the request that wrote the record `key` (`recordKey`) at `atMs`. */
  acknowledged(key: string, atMs: number): void {
    if (this.seenFirst.delete(key)) this.ackLags.push(0)
    else this.acks.set(key, atMs)
  }

  async stop(): Promise<SequencingLag> {
    await this.pause()
    await this.client.end()
    return {
      records: this.lags.length,
      lagMs: summarize(this.lags),
      acknowledgedRecords: this.ackLags.length,
      fromAcknowledgementMs: summarize(this.ackLags),
      pollMs: POLL_MS,
    }
  }
}
