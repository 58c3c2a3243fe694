import { availableParallelism } from 'node:os'

/** Worker threads for `audit verify` on large logs: one per core, at most four. */
export function verifyWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism()))
}

/**
 * Connections the CLI's `audit verify` checks a large log over, in its own thread, on the embedded database: it
 * serves one statement at a time on a thread of its own, so two connections keep it busy (one statement waiting
 * while the rows of the other are checked), and worker threads would only add their start to the run.
 */
export const EMBEDDED_VERIFY_CONNECTIONS = 2
