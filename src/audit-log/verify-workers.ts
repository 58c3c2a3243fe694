import { availableParallelism } from 'node:os'

/** Worker threads for `audit verify` on large logs: one per core, at most four. */
export function verifyWorkers(): number {
  return Math.max(1, Math.min(4, availableParallelism()))
}
