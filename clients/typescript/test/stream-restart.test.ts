import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { freePort } from '../../../test/helpers/child-server.ts'
import { createTestDatabase } from '../../../test/helpers/database.ts'
import { type ServiceProcess, startService } from '../../../test/helpers/process.ts'
import { type ArbiterClient, createArbiterClient, isEvaluationPending, paginate } from '../src/index.ts'
import { EVIDENCE } from './helpers/live.ts'
import { collect } from './helpers/stream-collector.ts'

describe('manifests.stream across a server restart', () => {
  it('resumes with Last-Event-ID after the restart: every manifest once, in log order, none skipped', async (t) => {
    // The built service as a real process on a fixed port, on a database that outlives it: the PostgreSQL server
    // at TEST_DATABASE_URL when set, else the embedded database in a data directory.
    const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-client-restart-'))
    t.after(() => rm(dataDir, { recursive: true, force: true }))
    const database = process.env.TEST_DATABASE_URL ? await createTestDatabase({ migrate: false }) : undefined
    if (database) t.after(() => database.stop())
    const adminKey = `boot_${randomBytes(24).toString('hex')}`
    const env = {
      ARBITER_DATA_DIR: dataDir,
      ARBITER_BOOTSTRAP_ADMIN_KEY: adminKey,
      ...(database ? { DATABASE_URL: database.connectionString } : {}),
    }
    const running = new Set<ServiceProcess>()
    const start = async (port: number) => {
      // A first start on a fresh embedded data directory initialises the database: allow for a busy machine.
      const service = await startService({ ...env, PORT: String(port) }, 180_000)
      running.add(service)
      return service
    }
    const stop = async (service: ServiceProcess) => {
      assert.equal(await service.stop(), 0, 'SIGTERM shuts down cleanly')
      running.delete(service)
    }
    t.after(async () => {
      for (const service of running) await service.stop('SIGKILL')
    })

    const port = await freePort()
    const first = await start(port)
    const admin = createArbiterClient({ baseUrl: first.baseUrl, apiKey: adminKey })
    const orchestratorKey = (
      await admin.keys.create({ role: 'orchestrator', orchestrator_ids: ['orch-a'], label: 'o' })
    ).key
    const dashboardKey = (await admin.keys.create({ role: 'dashboard', label: 'feed' })).key
    const at = (baseUrl: string, key: string) => createArbiterClient({ baseUrl, apiKey: key })
    const decide = async (client: ArbiterClient, runId: string) => {
      const outcome = await client.outcomes.create({
        subagent_id: 'restart',
        run_id: runId,
        evidence: EVIDENCE,
      })
      await client.outcomes.interpret(outcome.outcome_id, {
        orchestrator_id: 'orch-a',
        outcome_interpretation: 'success',
        success_criterion: { require: [] },
      })
      const result = await client.outcomes.evaluate(outcome.outcome_id)
      assert.ok(!isEvaluationPending(result))
      return result.manifest.manifest_id
    }

    const stream = collect(at(first.baseUrl, dashboardKey), {
      reconnectDelayMs: 100,
      maxReconnectDelayMs: 400,
    })
    t.after(() => stream.stop())
    await stream.connected()
    const issued = [await decide(at(first.baseUrl, orchestratorKey), 'before-1')]
    issued.push(await decide(at(first.baseUrl, orchestratorKey), 'before-2'))
    await stream.until(2)
    const lastBeforeRestart = stream.events[1]!.id
    await stop(first)

    // While the stream's port is dark, the service runs elsewhere on the same data and issues more manifests:
    // the stream can only get them by asking for everything after the last id it yielded.
    const elsewhere = await start(await freePort())
    issued.push(await decide(at(elsewhere.baseUrl, orchestratorKey), 'while-down-1'))
    issued.push(await decide(at(elsewhere.baseUrl, orchestratorKey), 'while-down-2'))
    await stop(elsewhere)

    const restarted = await start(port)
    await stream.until(4)
    issued.push(await decide(at(restarted.baseUrl, orchestratorKey), 'after-1'))
    await stream.until(5)

    assert.deepEqual(
      stream.events.map((event) => event.envelope.manifest.manifest_id),
      issued,
      'every manifest exactly once, in the order issued',
    )
    const logged: string[] = []
    for await (const envelope of paginate(at(restarted.baseUrl, dashboardKey).manifests.list, {})) {
      logged.push(envelope.manifest.manifest_id)
    }
    assert.deepEqual(logged, issued, 'the stream holds what the log holds')
    const seqs = stream.events.map((event) => event.auditSeq)
    assert.deepEqual(
      seqs,
      [...seqs].sort((a, b) => a - b),
      'in log order',
    )
    assert.equal(stream.connections[0], undefined)
    assert.equal(stream.connections.at(-1), lastBeforeRestart, 'resumed after the last id it yielded')
    await stream.stop()
    await stop(restarted)
  })
})
