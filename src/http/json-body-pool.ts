import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import type { CanonicalPart } from '../domain/shared/canonical-json.ts'
import type { JsonBodyReading } from '../domain/shared/i-json.ts'
import { WORKER_HEAP } from '../worker-heap.ts'

/** A worker's answer for one body: its text and the canonical text of its large parts, or why it is refused. */
export type WorkerReading =
  | { ok: true; text: string; parts: CanonicalPart[] }
  | Extract<JsonBodyReading, { ok: false }>

interface Task {
  bytes: Uint8Array
  resolve(reading: WorkerReading): void
  reject(err: Error): void
}

/**
 * Worker threads that read large request bodies (src/http/json-body-worker.ts), so that parsing, the I-JSON
 * check and canonicalizing a megabyte of JSON never hold the event loop: `/healthz` and every other request keep
 * being answered while large bodies arrive. Few workers (one on a two-core machine: the main thread needs the
 * other core), started when first needed, each reading one body at a time; further bodies wait in line.
 */
export class JsonBodyWorkers {
  readonly #size: number
  readonly #idle: Worker[] = []
  readonly #busy = new Map<Worker, Task>()
  readonly #queue: Task[] = []
  #closed = false
  /** Bodies read by a worker so far (tests check that large bodies take this path). */
  bodiesRead = 0

  constructor(size = Math.max(1, Math.min(2, availableParallelism() - 1))) {
    this.#size = size
  }

  /** Reads one body in a worker; rejects if the worker fails or the pool is closed (read it elsewhere then). */
  read(bytes: Uint8Array): Promise<WorkerReading> {
    if (this.#closed) return Promise.reject(new Error('the body workers are closed'))
    return new Promise((resolve, reject) => {
      this.#queue.push({ bytes, resolve, reject })
      this.#dispatch()
    })
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const task of this.#queue.splice(0)) task.reject(new Error('the body workers are closed'))
    const workers = [...this.#idle.splice(0), ...this.#busy.keys()]
    for (const task of this.#busy.values()) task.reject(new Error('the body workers are closed'))
    this.#busy.clear()
    await Promise.all(workers.map((worker) => worker.terminate()))
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let worker = this.#idle.pop()
      if (!worker) {
        if (this.#busy.size >= this.#size) return
        worker = this.#start()
      }
      const task = this.#queue.shift()!
      this.#busy.set(worker, task)
      worker.ref()
      worker.postMessage(task.bytes)
    }
  }

  #start(): Worker {
    const worker = startBodyWorker()
    worker.unref()
    const fail = (err: Error) => {
      const task = this.#busy.get(worker)
      this.#busy.delete(worker)
      const idleAt = this.#idle.indexOf(worker)
      if (idleAt !== -1) this.#idle.splice(idleAt, 1)
      task?.reject(err)
      if (!this.#closed) this.#dispatch()
    }
    worker.on('message', (message: { reading: WorkerReading } | { failed: string }) => {
      const task = this.#busy.get(worker)
      if (!task) return
      this.#busy.delete(worker)
      worker.unref()
      if (this.#closed) return
      this.#idle.push(worker)
      if ('reading' in message) {
        this.bodiesRead += 1
        task.resolve(message.reading)
      } else {
        task.reject(new Error(message.failed))
      }
      this.#dispatch()
    })
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`a body worker exited (code ${code})`)))
    return worker
  }
}

/**
 * Compiled code runs json-body-worker.js as is; under tsx (development, tests) the worker first registers tsx's
 * loader itself, since loaders given to the main thread do not reach workers.
 */
function startBodyWorker(): Worker {
  const self = import.meta.url
  const options = { resourceLimits: WORKER_HEAP }
  if (!self.endsWith('.ts')) return new Worker(new URL('./json-body-worker.js', self), options)
  const loader = import.meta.resolve('tsx/esm/api')
  const entry = new URL('./json-body-worker.ts', self).href
  return new Worker(
    `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}) })`,
    { ...options, eval: true },
  )
}
