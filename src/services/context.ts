import type { FastifyBaseLogger } from 'fastify'
import type { SigningKey } from '../crypto/signing-key.ts'
import type { Pool } from '../db/pool.ts'
import type { Metrics } from '../http/plugins/metrics.ts'
import type { VerifiableLog } from '../log/verifiable-log.ts'
import type { SsrfPolicy } from '../probes/ssrf-guard.ts'

/** What use cases need from the running app; routes pass it, tests can build it directly. */
export interface ServiceContext {
  db: Pool
  signingKey: SigningKey
  metrics: Metrics
  log: FastifyBaseLogger
  /** The audit log's sequencer, read-your-writes barrier, checkpoints and proofs. */
  auditLog: VerifiableLog
  probes: {
    policy: SsrfPolicy
    /** Environment `{env: NAME}` probe headers are read from, at call time. */
    env: Record<string, string | undefined>
  }
}

/** The id written as `actor` in audit records: the API key id, or "system". */
export type Actor = string
