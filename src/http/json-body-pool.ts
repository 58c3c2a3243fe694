import type { CanonicalPart } from '../domain/shared/canonical-json.ts'
import type { JsonBodyReading } from '../domain/shared/i-json.ts'
import { WorkerThreads } from '../worker-threads.ts'

/** A worker's answer for one body: its text and the canonical text of its large parts, or why it is refused. */
export type WorkerReading =
  | { ok: true; text: string; parts: CanonicalPart[] }
  | Extract<JsonBodyReading, { ok: false }>

/**
 * Worker threads that read large request bodies (src/http/json-body-worker.ts), so that parsing, the I-JSON
 * check and canonicalizing a megabyte of JSON never hold the event loop (src/worker-threads.ts).
 */
export class JsonBodyWorkers extends WorkerThreads<Uint8Array, WorkerReading> {
  constructor(size?: number) {
    super('http/json-body-worker', size)
  }

  /** Reads one body in a worker; rejects if the worker fails or the pool is closed (read it elsewhere then). */
  read(bytes: Uint8Array): Promise<WorkerReading> {
    return this.run(bytes)
  }

  /** Bodies read by a worker so far (tests check that large bodies take this path). */
  get bodiesRead(): number {
    return this.tasksDone
  }
}
