import { cfg } from '../config.ts'
import { compareEmbedded, type ModeResult } from '../embedded-load.ts'
import { log } from '../run-context.ts'

/**
 * The embedded default against PostgreSQL mode, side by side on the decide flow (embedded-load.ts): the built
 * server (`node dist/server.js`) started with no DATABASE_URL, then with one, each driven for a warm-up and the
 * measured window. Runs after the other phases' servers have stopped (it starts its own).
 */
export interface EmbeddedPhase {
  embedded: ModeResult
  postgres: ModeResult
  /** embedded req/s ÷ PostgreSQL-mode req/s. */
  throughputRatio: number
}

export async function phaseEmbedded(): Promise<EmbeddedPhase> {
  log(`embedded: the decide flow on the embedded database and on PostgreSQL`)
  const results = await compareEmbedded({
    durationS: cfg.durationS,
    warmupS: cfg.warmupS,
    connections: cfg.connections,
    adminUrl: cfg.adminUrl,
  })
  const embedded = results.find((r) => r.mode === 'embedded')!
  const postgres = results.find((r) => r.mode === 'postgres')!
  return { embedded, postgres, throughputRatio: embedded.requestsPerSecond / postgres.requestsPerSecond }
}
