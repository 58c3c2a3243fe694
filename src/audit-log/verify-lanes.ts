import { Worker } from 'node:worker_threads'
import pg from 'pg'
import { typeParsers } from '../db/pool.ts'
import { WORKER_HEAP } from '../worker-heap.ts'
import { ChunkChecker, type ChunkResult, type ChunkTask } from './core/verify-chunks.ts'
import { readNodesCompletedIn } from './store/merkle-nodes.ts'
import { eachAuditRecordForCheck } from './store/records.ts'

/**
 * Where the chunks of a large log are checked (verify-log.ts merges their results in order): on worker threads,
 * or in this thread, each lane over a connection of its own.
 */
export interface ChunkLane {
  /** How many tasks it is given at once. */
  readonly capacity: number
  check(task: ChunkTask): Promise<ChunkResult>
  close(): Promise<void>
}

/** Where verification may check chunks: a connection string for the lanes' own connections, and how many. */
export interface ParallelVerify {
  connectionString: string
  workers: number
  /**
   * Check the chunks in this thread, over `workers` connections, rather than on worker threads: for a database
   * that serves one session at a time (the embedded one), whose own thread is what limits the pace, so that the
   * time worker threads take to start buys nothing. Two connections keep its next statement waiting while this
   * thread checks the rows of the last one. Blocks this thread's event loop for a chunk at a time.
   */
  inThread?: boolean
}

export function chunkLanes(parallel: ParallelVerify, tasks: number): ChunkLane[] {
  const count = Math.max(1, Math.min(parallel.workers, tasks))
  const lane = parallel.inThread ? connectionLane : workerLane
  return Array.from({ length: count }, () => lane(parallel.connectionString))
}

/**
 * Checks one chunk over `client`: each record as its row arrives (records' canonical form, chain hashes, leaf
 * hashes), then the tree over them against the stored nodes they complete.
 */
export async function checkChunk(client: pg.ClientBase, task: ChunkTask): Promise<ChunkResult> {
  const chunk = new ChunkChecker(task)
  await eachAuditRecordForCheck(client, task.from, task.to, task.storedText, (record) => chunk.add(record))
  return chunk.finish(await readNodesCompletedIn(client, task.from - 1, task.to))
}

/** A client for checking chunks: without pg's query_timeout, which `eachAuditRecordForCheck` cannot run under. */
export function checkingClient(connectionString: string): pg.Client {
  const client = new pg.Client({ connectionString, application_name: 'arbiter-verify', types: typeParsers })
  client.on('error', () => {})
  return client
}

/** A lane in this thread: one connection, one task at a time. */
function connectionLane(connectionString: string): ChunkLane {
  const client = checkingClient(connectionString)
  const connected = client.connect()
  connected.catch(() => {})
  return {
    capacity: 1,
    check: async (task) => {
      await connected
      return checkChunk(client, task)
    },
    close: () => client.end().catch(() => {}),
  }
}

/** A lane on a worker thread (verify-worker.ts), two tasks at a time so that it never waits for the next one. */
function workerLane(connectionString: string): ChunkLane {
  const worker = startVerifyWorker(connectionString)
  const pending = new Map<number, { resolve: (result: ChunkResult) => void; reject: (err: Error) => void }>()
  const failAll = (err: Error) => {
    for (const { reject } of pending.values()) reject(err)
    pending.clear()
  }
  worker.on('error', failAll)
  worker.on('exit', (code) => failAll(new Error(`verification worker exited (code ${code})`)))
  worker.on('message', (message: { index: number; result?: ChunkResult; error?: string }) => {
    const waiting = pending.get(message.index)
    pending.delete(message.index)
    if (message.error !== undefined) waiting?.reject(new Error(`verification worker: ${message.error}`))
    else waiting?.resolve(message.result!)
  })
  return {
    capacity: 2,
    check: (task) =>
      new Promise((resolve, reject) => {
        pending.set(task.index, { resolve, reject })
        worker.postMessage(task)
      }),
    close: async () => {
      await worker.terminate()
    },
  }
}

/**
 * Starts a verification worker. Compiled code runs verify-worker.js as is; under tsx (development, tests) the
 * worker first registers tsx's loader itself, since loaders given to the main thread do not reach workers.
 */
function startVerifyWorker(connectionString: string): Worker {
  const self = import.meta.url
  const options = { workerData: { connectionString }, resourceLimits: WORKER_HEAP }
  if (!self.endsWith('.ts')) return new Worker(new URL('./verify-worker.js', self), options)
  const loader = import.meta.resolve('tsx/esm/api')
  const entry = new URL('./verify-worker.ts', self).href
  return new Worker(
    `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}) })`,
    { ...options, eval: true },
  )
}
