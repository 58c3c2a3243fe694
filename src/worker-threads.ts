import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { WORKER_HEAP } from './worker-heap.ts'

interface Task<Message, Answer> {
  message: Message
  resolve(answer: Answer): void
  reject(err: Error): void
}

/**
 * A few worker threads that run one kind of CPU-heavy, pure work (reading a large request body, deciding a large
 * case) so that it never holds the event loop: `/healthz` and every other request keep being answered meanwhile.
 * Few workers (one on a two-core machine: the main thread needs the other core), started when first needed, each
 * doing one task at a time; further tasks wait in line. A worker module answers each message with `{answer}`, or
 * `{failed}` (the caller then does the work itself).
 *
 * `entry` names the worker module beside this one without its extension (e.g. `http/json-body-worker`): compiled
 * code runs the `.js` file as is; under tsx (development, tests) the worker first registers tsx's loader itself,
 * since loaders given to the main thread do not reach workers.
 */
export class WorkerThreads<Message, Answer> {
  readonly #entry: string
  readonly #size: number
  readonly #idle: Worker[] = []
  readonly #busy = new Map<Worker, Task<Message, Answer>>()
  readonly #queue: Task<Message, Answer>[] = []
  #closed = false
  /** Tasks a worker answered so far (tests check that large work takes this path). */
  tasksDone = 0

  constructor(entry: string, size = Math.max(1, Math.min(2, availableParallelism() - 1))) {
    this.#entry = entry
    this.#size = size
  }

  /** Tasks a worker is doing right now. */
  get running(): number {
    return this.#busy.size
  }

  /** Runs one task in a worker; rejects if the worker fails or the pool is closed (do the work elsewhere then). */
  run(message: Message): Promise<Answer> {
    if (this.#closed) return Promise.reject(new Error('the worker threads are closed'))
    return new Promise((resolve, reject) => {
      this.#queue.push({ message, resolve, reject })
      this.#dispatch()
    })
  }

  async close(): Promise<void> {
    this.#closed = true
    for (const task of this.#queue.splice(0)) task.reject(new Error('the worker threads are closed'))
    const workers = [...this.#idle.splice(0), ...this.#busy.keys()]
    for (const task of this.#busy.values()) task.reject(new Error('the worker threads are closed'))
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
      try {
        worker.postMessage(task.message)
      } catch (err) {
        // A message that cannot be cloned: this task fails (its caller does the work), the worker stays free.
        this.#idle.push(worker)
        task.reject(err instanceof Error ? err : new Error(String(err)))
        continue
      }
      this.#busy.set(worker, task)
      worker.ref()
    }
  }

  #start(): Worker {
    const worker = startWorker(this.#entry)
    worker.unref()
    const fail = (err: Error) => {
      const task = this.#busy.get(worker)
      this.#busy.delete(worker)
      const idleAt = this.#idle.indexOf(worker)
      if (idleAt !== -1) this.#idle.splice(idleAt, 1)
      task?.reject(err)
      if (!this.#closed) this.#dispatch()
    }
    worker.on('message', (message: { answer: Answer } | { failed: string }) => {
      const task = this.#busy.get(worker)
      if (!task) return
      this.#busy.delete(worker)
      worker.unref()
      if (this.#closed) return
      this.#idle.push(worker)
      if ('answer' in message) {
        this.tasksDone += 1
        task.resolve(message.answer)
      } else {
        task.reject(new Error(message.failed))
      }
      this.#dispatch()
    })
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`a worker thread exited (code ${code})`)))
    return worker
  }
}

function startWorker(entry: string): Worker {
  const self = import.meta.url
  const options = { resourceLimits: WORKER_HEAP }
  if (!self.endsWith('.ts')) return new Worker(new URL(`./${entry}.js`, self), options)
  const loader = import.meta.resolve('tsx/esm/api')
  const url = new URL(`./${entry}.ts`, self).href
  return new Worker(
    `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(url)}) })`,
    { ...options, eval: true },
  )
}
