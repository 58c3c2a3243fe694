import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { CommittedBatch } from './audit-log/sequencer/sequencer.ts'
import type { Pool } from './db/pool.ts'

/** What the service counts, on a registry of this app's own (tests build several apps in one process). */
export interface Metrics {
  registry: Registry
  requestDuration: Histogram<'method' | 'route' | 'status_code'>
  manifestsIssued: Counter<'verdict' | 'directive'>
  probeDuration: Histogram<'probe_id'>
  probeErrors: Counter<'probe_id' | 'reason'>
  /** The audit log's sequencer on this replica: call with every batch it commits (`observeSequencedBatch`). */
  sequencingLag: Histogram
  recordsSequenced: Counter
  /** Whether this replica holds the sequencer's lease, read at every scrape from `sequencerLeader.source`. */
  sequencerLeader: { source: () => boolean }
  /** Pages of manifests the stream feed read: one per page, however many streams it was written to. */
  streamPagesRead: Counter
  /** Open manifest streams on this replica, read at every scrape from `streamsOpen.source`. */
  streamsOpen: { source: () => number }
}

export function createMetrics(pool: Pool): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  new Gauge({
    name: 'arbiter_db_pool_connections',
    help: 'Database pool connections by state',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.set({ state: 'total' }, pool.totalCount)
      this.set({ state: 'idle' }, pool.idleCount)
      this.set({ state: 'waiting' }, pool.waitingCount)
    },
  })
  const sequencerLeader = { source: () => false }
  new Gauge({
    name: 'arbiter_audit_sequencer_leader',
    help: 'Whether this replica holds the audit sequencer lease (1) or not (0); exactly one replica should',
    registers: [registry],
    collect() {
      this.set(sequencerLeader.source() ? 1 : 0)
    },
  })
  const streamsOpen = { source: () => 0 }
  new Gauge({
    name: 'arbiter_manifest_streams_open',
    help: 'Open manifest streams (SSE) on this replica',
    registers: [registry],
    collect() {
      this.set(streamsOpen.source())
    },
  })
  return {
    registry,
    sequencerLeader,
    streamsOpen,
    streamPagesRead: new Counter({
      name: 'arbiter_manifest_stream_pages_read_total',
      help: 'Pages of manifests read for the manifest streams: one read is written to every stream at that point',
      registers: [registry],
    }),
    sequencingLag: new Histogram({
      name: 'arbiter_audit_sequencing_lag_seconds',
      help: 'From an audit record being written (its at) to its batch committing in the log, on the sequencing replica',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    recordsSequenced: new Counter({
      name: 'arbiter_audit_records_sequenced_total',
      help: 'Audit records this replica placed in the log',
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'arbiter_http_request_duration_seconds',
      help: 'HTTP request latency by route and status',
      labelNames: ['method', 'route', 'status_code'] as const,
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    manifestsIssued: new Counter({
      name: 'arbiter_manifests_issued_total',
      help: 'Manifests issued, by verdict and directive',
      labelNames: ['verdict', 'directive'] as const,
      registers: [registry],
    }),
    probeDuration: new Histogram({
      name: 'arbiter_probe_duration_seconds',
      help: 'Ground-truth probe execution latency (all attempts)',
      labelNames: ['probe_id'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: [registry],
    }),
    probeErrors: new Counter({
      name: 'arbiter_probe_errors_total',
      help: 'Ground-truth probe errors by probe and reason',
      labelNames: ['probe_id', 'reason'] as const,
      registers: [registry],
    }),
  }
}

/** Counts a batch the sequencer committed at `committedAtMs` and each record's lag from its `at`. */
export function observeSequencedBatch(metrics: Metrics, batch: CommittedBatch, committedAtMs: number): void {
  if (batch.records.length === 0) return
  metrics.recordsSequenced.inc(batch.records.length)
  for (const record of batch.records) {
    metrics.sequencingLag.observe(Math.max(0, committedAtMs - Date.parse(record.at)) / 1000)
  }
}
