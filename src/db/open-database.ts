import type { Config } from '../config.ts'
import type { EmbeddedOptions, EmbeddedPostgres } from './embedded.ts'

/** Where the process's database is, once it can be connected to. */
export interface OpenDatabase {
  connectionString: string
  poolMax: number
  embedded?: EmbeddedPostgres
}

/**
 * The database the process uses: the server at DATABASE_URL, or the embedded one in the data dir (started here).
 * The embedded database runs one transaction at a time, so its pool stays small (EMBEDDED_POOL_MAX). Loads
 * nothing else: the CLI starts the embedded database's thread with it before it loads what its command needs.
 */
export async function openDatabase(
  config: Config,
  options: Pick<EmbeddedOptions, 'onMaintenance' | 'onProcessStarted'> = {},
): Promise<OpenDatabase> {
  if (config.databaseUrl) return { connectionString: config.databaseUrl, poolMax: config.dbPoolMax }
  // Loaded only when used: PGlite's WebAssembly build costs memory a server-backed process never needs.
  const { EMBEDDED_POOL_MAX, startEmbeddedPostgres } = await import('./embedded.ts')
  const embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, ...options })
  return { connectionString: embedded.connectionString, poolMax: EMBEDDED_POOL_MAX, embedded }
}
