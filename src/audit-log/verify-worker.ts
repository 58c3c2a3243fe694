import { parentPort, workerData } from 'node:worker_threads'
import type { ChunkTask } from './core/verify-chunks.ts'
import { checkChunk, checkingClient } from './verify-lanes.ts'

/**
 * A verification worker: reads the chunks it is given over its own connection and checks them (records'
 * canonical form, chain hashes, leaf and node hashes are what verifying spends its time on), each record as it
 * arrives. Answers one message per task, with the task's index: `{index, result}` or `{index, error}`.
 */
const port = parentPort!
const client = checkingClient((workerData as { connectionString: string }).connectionString)
const connected = client.connect()

port.on('message', async (task: ChunkTask | 'close') => {
  if (task === 'close') {
    await client.end().catch(() => {})
    port.close()
    return
  }
  try {
    await connected
    port.postMessage({ index: task.index, result: await checkChunk(client, task) })
  } catch (err) {
    port.postMessage({ index: task.index, error: err instanceof Error ? err.message : String(err) })
  }
})
