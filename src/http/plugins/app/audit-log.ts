import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { VerifiableLog } from '../../../audit-log/verifiable-log.ts'
import { verifyWorkers } from '../../../audit-log/verify-workers.ts'
import { createPool } from '../../../db/pool.ts'
import { observeSequencedBatch } from '../../../metrics.ts'

declare module 'fastify' {
  interface FastifyInstance {
    /** The audit log: its sequencer, the read-your-writes barrier, checkpoints and proofs (docs/log-format.md). */
    auditLog: VerifiableLog
  }
}

/**
 * Opens the verifiable log and starts this replica's sequencer. Every replica runs one; only the holder of the
 * lease in the database works, and another takes over within seconds when it dies. The sequencer has a
 * connection of its own, so a busy request pool never delays sequencing.
 */
async function auditLogPlugin(app: FastifyInstance) {
  const { config } = app
  const sequencerDb = createPool({
    connectionString: config.connectionString,
    max: 1,
    // As the request pool: the batch's write is planned once per connection, not for every batch.
    namedStatements: config.namedStatements ?? true,
    onError: (err) => app.log.warn({ err: { message: err.message } }, 'audit sequencer connection lost'),
  })
  const auditLog = await VerifiableLog.open(app.db, app.signingKey, {
    origin: config.logOrigin,
    checkpointIntervalMs: config.checkpointIntervalMs ?? 1_000,
    sequencer: config.sequencer,
    sequencerDb,
    parallelVerify: { connectionString: config.connectionString, workers: verifyWorkers() },
    onError: (err) => app.log.warn({ err }, 'audit sequencer batch failed; retrying'),
  })
  const { metrics } = app
  metrics.sequencerLeader.source = () => auditLog.sequencer.holdsLease
  auditLog.sequencer.onBatch((batch) => observeSequencedBatch(metrics, batch, Date.now()))
  auditLog.start()
  app.decorate('auditLog', auditLog)
  // onClose hooks run last-registered first: the sequencer stops (and hands its lease over) before the pools close.
  app.addHook('onClose', async () => {
    await auditLog.stop()
    await sequencerDb.end()
  })
}

export default fp(auditLogPlugin, {
  name: 'arbiter-audit-log',
  dependencies: ['arbiter-settings', 'arbiter-db', 'arbiter-metrics'],
})
