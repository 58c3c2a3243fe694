import type { FastifyBaseLogger } from 'fastify'
import type { VerifiableLog } from '../audit-log/verifiable-log.ts'
import type { SigningKey } from '../crypto/signing-key.ts'
import type { Pool } from '../db/pool.ts'
import type { DecisionWorkers } from '../engine/decision-workers.ts'
import type { Metrics } from '../metrics.ts'
import type { SsrfPolicy } from '../probes/ssrf-guard.ts'
import type { KeyCache } from './key-cache.ts'

/**
 * Everything a use case needs from the running service, in one object: routes pass `app.services`, the CLI and
 * tests build the parts they need. A service asks only for what it uses (`Pick<ServiceContext, 'db'>`).
 */
export interface ServiceContext {
  db: Pool
  signingKey: SigningKey
  /** The audit log's sequencer, read-your-writes barrier, checkpoints and proofs. */
  auditLog: VerifiableLog
  metrics: Metrics
  /** Active keys by secret hash, kept true across replicas (absent: every request reads its key). */
  keyCache?: KeyCache | undefined
  log: FastifyBaseLogger
  /** Worker threads that decide large cases (absent: every case is decided on the calling thread). */
  decisionWorkers?: DecisionWorkers | undefined
  probes: {
    policy: SsrfPolicy
    /** Environment `{env: NAME}` probe headers are read from, at call time. */
    env: Record<string, string | undefined>
  }
}

/** Who made a change, as audit records name it: the API key id, or "system". */
export type Actor = string
