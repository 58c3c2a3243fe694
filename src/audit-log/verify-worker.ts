import { parentPort, workerData } from 'node:worker_threads'
import pg from 'pg'
import { typeParsers } from '../db/pool.ts'
import { ChunkChecker, type ChunkTask } from './core/verify-chunks.ts'
import { readNodesCompletedIn } from './store/merkle-nodes.ts'
import { eachAuditRecordForCheck } from './store/records.ts'

/**
 * A verification worker: reads the chunks it is given over its own connection and checks them (records'
 * canonical form, chain hashes, leaf and node hashes are what verifying spends its time on), each record as it
 * arrives. Answers one message per task: `{result}` or `{error}`.
 */
const port = parentPort!
const client = new pg.Client({
  connectionString: (workerData as { connectionString: string }).connectionString,
  application_name: 'arbiter-verify',
  types: typeParsers,
})
client.on('error', () => {})
const connected = client.connect()

port.on('message', async (task: ChunkTask | 'close') => {
  if (task === 'close') {
    await client.end().catch(() => {})
    port.close()
    return
  }
  try {
    await connected
    const chunk = new ChunkChecker(task)
    await eachAuditRecordForCheck(client, task.from, task.to, task.storedText, (record) => chunk.add(record))
    const nodes = await readNodesCompletedIn(client, task.from - 1, task.to)
    port.postMessage({ result: chunk.finish(nodes) })
  } catch (err) {
    port.postMessage({ error: err instanceof Error ? err.message : String(err) })
  }
})
