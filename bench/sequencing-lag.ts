import pg from 'pg'
import { type LatencySummary, summarize } from './load.ts'

/**
 * Sequencing lag under load, seen from outside the service: a connection of the bench polls audit_records every
 * POLL_MS for records past the last one it saw, and takes each new record's lag as (when it first saw it − the
 * record's `at`, the time its change wrote it, before that change committed). The figure is an upper bound by up to
 * one poll interval plus one query; Arbiter and the bench run on the same machine, so they share a clock.
 */
const POLL_MS = 5

export interface SequencingLag {
  records: number
  lagMs: LatencySummary
  pollMs: number
}

export class SequencingLagSampler {
  private readonly client: pg.Client
  private lastSeq = 0
  private readonly lags: number[] = []
  private running = false
  private loop: Promise<void> | null = null

  constructor(connectionString: string) {
    this.client = new pg.Client({ connectionString, application_name: 'bench-lag' })
  }

  async start(): Promise<void> {
    await this.client.connect()
    const { rows } = await this.client.query<{ seq: string | null }>(
      'SELECT max(seq)::text AS seq FROM audit_records',
    )
    this.lastSeq = Number(rows[0]?.seq ?? 0)
    this.resume()
  }

  /**
   * Stops polling until `resume` (while another server is measured, so that the sampler's queries load only the
   * windows it samples). Records written meanwhile are seen, and counted, when polling resumes: pause only when
   * nothing is written to the log.
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
      const { rows } = await this.client.query<{ seq: string; at_ms: string }>(
        `SELECT seq::text, (extract(epoch FROM at) * 1000)::float8::text AS at_ms
         FROM audit_records WHERE seq > $1 ORDER BY seq LIMIT 5000`,
        [this.lastSeq],
      )
      const seen = Date.now()
      for (const row of rows) {
        this.lags.push(Math.max(0, seen - Number(row.at_ms)))
        this.lastSeq = Number(row.seq)
      }
      const wait = POLL_MS - (Date.now() - started)
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    }
  }

  async stop(): Promise<SequencingLag> {
    await this.pause()
    await this.client.end()
    return { records: this.lags.length, lagMs: summarize(this.lags), pollMs: POLL_MS }
  }
}
