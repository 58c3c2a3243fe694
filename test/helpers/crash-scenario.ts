import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { compactVerify, createLocalJWKSet } from 'jose'
import { type ChildServer, freePort, startChildServer } from './child-server.ts'
import { createTestDatabase, testPoolMax } from './database.ts'
import { CRITERION, clientHash, EVIDENCE, uniqueRun } from './fixtures.ts'
import { type HttpAnswer, type HttpClient, httpClient } from './http-client.ts'
import { assertStoreIntegrity } from './integrity.ts'
import { runLoad } from './load.ts'

/**
 * Crash safety ("loses nothing"): the real service runs as a child process under concurrent
 * orchestrator traffic and is killed with SIGKILL at random moments, then restarted on the same database.
 * Afterwards everything any client was told succeeded (a 2xx) must be there, whole, with its audit records;
 * no outcome may have two decisions; the audit log must verify, gapless, with nothing left unsequenced.
 *
 * With several replicas, each kill takes the one that has run longest, which is the audit sequencer's lease
 * holder (a replica started later cannot take a lease that is being renewed): under load it is killed mid-batch
 * or between batches, and a surviving replica must take the sequencer over within 5 s while writes go on.
 */

export interface CrashScenarioOptions {
  cycles: number
  workers: number
  /** Each kill comes a random time in [min, max] ms after the server became ready. */
  killAfterMs: [number, number]
  /** Traffic after the last restart, before the checks. */
  settleMs: number
  /**
   * Also settle some disagreements with a ground-truth probe (a local HTTP target answering after a short
   * delay), so kills land in the middle of probe executions too.
   */
  probes?: boolean
  /** Service processes on the one database (default 1: kill and restart the only one). */
  replicas?: number
}

export interface CrashReport {
  cycles: number
  /** With several replicas: per kill, ms until a surviving replica answered an audit read covering the writes. */
  takeoverMs: number[]
  killDelaysMs: number[]
  inFlightAtKills: number[]
  requests: number
  networkFailures: number
  acked: {
    outcomes: number
    evidence: number
    interpretations: number
    manifests: number
    resolutions: number
    probeDecisions: number
  }
  auditRecords: number
}

type Scenario = 'agree' | 'halt' | 'policy' | 'probe'

interface AckedOutcome {
  id: string
  runId: string
  scenario: Scenario
  evidenceHashes: string[]
  interpretationIds: string[]
  manifestId?: string
  directive?: string
  resolutionManifestId?: string
}

class Abandoned extends Error {}

export async function runCrashScenario(
  t: Pick<TestContext, 'after' | 'diagnostic'>,
  options: CrashScenarioOptions,
): Promise<CrashReport> {
  const db = await createTestDatabase()
  const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-crash-'))
  const bootstrapKey = randomBytes(30).toString('base64url').slice(0, 40)
  const replicas = options.replicas ?? 1
  const ports: number[] = []
  for (let i = 0; i < replicas; i++) ports.push(await freePort())
  // The ground truth the probe scenario asks: settled, after a little while.
  const target = createServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"state":"settled"}')
    }, 30)
  })
  target.listen(0, '127.0.0.1')
  await once(target, 'listening')
  const env = {
    ARBITER_PROBE_ALLOW_PRIVATE: 'true',
    DATABASE_URL: db.connectionString,
    ARBITER_DATA_DIR: dataDir,
    ARBITER_BOOTSTRAP_ADMIN_KEY: bootstrapKey,
    ARBITER_RATE_LIMIT_PER_MINUTE: '0',
    // Like production: the embedded database takes one connection at a time.
    ARBITER_DB_POOL_MAX: String(testPoolMax(db.kind)),
    LOG_LEVEL: 'warn',
  }
  // Started one after the other: the first one takes the sequencer's lease and keeps it while it lives.
  const servers: ChildServer[] = []
  for (const port of ports) servers.push(await startChildServer({ env, port }))
  const outputs: string[] = []
  const clients = servers.map((server) => httpClient(server.baseUrl))
  const http = clients[0]!
  let load: ReturnType<typeof runLoad> | undefined
  t.after(async () => {
    await load?.stop()
    for (const server of servers) await server.killHard()
    for (const client of clients) await client.close()
    await new Promise<void>((resolve) => target.close(() => resolve()))
    await db.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  const admin = bootstrapKey
  const createKey = async (body: object) => {
    const answer = await http.call('POST', '/v1/admin/keys', admin, body)
    assert.equal(answer.status, 201, answer.text)
    return answer.json.key as string
  }
  const keyA = await createKey({ role: 'orchestrator', orchestrator_ids: ['orch-a'], label: 'crash a' })
  const keyB = await createKey({ role: 'orchestrator', orchestrator_ids: ['orch-b'], label: 'crash b' })
  const registered = await http.call('POST', '/v1/probes', admin, {
    name: 'ledger',
    request: { url: `http://127.0.0.1:${(target.address() as AddressInfo).port}/refunds/{{outcome.run_id}}` },
    timeout_ms: 1_000,
    predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
  })
  assert.equal(registered.status, 201, registered.text)
  const probeId = registered.json.probe_id as string

  const acked: AckedOutcome[] = []
  const unexpected: string[] = []
  let requests = 0
  let networkFailures = 0

  /**
   * Sends one request until it gets an answer in `ok`: a network failure (the server is dead or restarting)
   * or a 503 is retried with the very same body, as a real client would. A status outside `ok` is recorded
   * as a failure of the test; 409 is accepted where a retry may find its own earlier, committed attempt.
   */
  const send = async (
    via: HttpClient,
    method: string,
    path: string,
    key: string,
    body: unknown,
    ok: number[],
    okAfterRetry: number[] = [],
  ): Promise<HttpAnswer> => {
    let retried = false
    for (;;) {
      if (load?.stopping) throw new Abandoned()
      let answer: HttpAnswer
      try {
        requests += 1
        answer = await via.call(method, path, key, body)
      } catch {
        networkFailures += 1
        retried = true
        await sleep(30)
        continue
      }
      if (ok.includes(answer.status) || (retried && okAfterRetry.includes(answer.status))) return answer
      if (answer.status === 503) {
        retried = true
        await sleep(30)
        continue
      }
      unexpected.push(`${method} ${path} → ${answer.status} ${answer.text.slice(0, 300)}`)
      throw new Abandoned()
    }
  }

  const oneOutcome = async (loop: number) => {
    const scenarios: Scenario[] = options.probes
      ? ['agree', 'halt', 'policy', 'probe']
      : ['agree', 'halt', 'policy']
    const scenario = scenarios[(loop + acked.length) % scenarios.length]!
    // Each worker talks to one replica; a killed replica's workers retry until it is back.
    const via = clients[loop % clients.length]!
    const runId = uniqueRun('crash')
    const created = await send(
      via,
      'POST',
      '/v1/outcomes',
      keyA,
      {
        subagent_id: 'crash-agent',
        run_id: runId,
        evidence: EVIDENCE,
        fallback_policy: scenario === 'policy' ? 'strictest_wins' : 'escalate',
        ...(scenario === 'probe' ? { probe: { probe_id: probeId } } : {}),
      },
      [200, 201],
    )
    const record: AckedOutcome = {
      id: created.json.outcome_id,
      runId,
      scenario,
      evidenceHashes: [created.json.evidence_hash],
      interpretationIds: [],
    }
    acked.push(record)
    const base = `/v1/outcomes/${record.id}`
    if (acked.length % 2 === 0) {
      const added = await send(
        via,
        'POST',
        `${base}/evidence`,
        keyA,
        { evidence: [{ kind: 'log', content: `note for ${runId}` }] },
        [200, 201],
      )
      record.evidenceHashes.push(added.json.evidence_hash)
    }
    const readings = {
      agree: ['success', 'success'],
      halt: ['failure', 'success'],
      policy: ['partial', 'success'],
      probe: ['failure', 'success'],
    }[scenario]
    for (const [index, [key, orchestrator]] of [
      [keyA, 'orch-a'],
      [keyB, 'orch-b'],
    ].entries()) {
      const interpretation = await send(
        via,
        'POST',
        `${base}/interpretations`,
        key!,
        {
          orchestrator_id: orchestrator,
          outcome_interpretation: readings[index],
          success_criterion: scenario === 'halt' && index === 1 ? { require: ['exit_code == 0'] } : CRITERION,
        },
        [200, 201],
      )
      record.interpretationIds.push(interpretation.json.interpretation_id)
    }
    const evaluated = await send(via, 'POST', `${base}/evaluate`, keyA, undefined, [200])
    record.manifestId = evaluated.json.manifest.manifest_id
    record.directive = evaluated.json.manifest.directive
    if (scenario === 'probe') {
      const verdict = evaluated.json.manifest.verdict
      const truth = evaluated.json.manifest.ground_truth_arbiter_predicate
      if (verdict !== 'GROUND_TRUTH_RESOLVES' || truth?.result !== 'success') {
        unexpected.push(`probe outcome ${record.id} decided ${verdict} with ${JSON.stringify(truth)}`)
      }
    }
    if (record.directive === 'HALT' && acked.length % 2 === 1) {
      const resolved = await send(
        via,
        'POST',
        `${base}/resolution`,
        admin,
        { outcome: 'failure', rationale: 'ledger shows no refund' },
        [201],
        [409],
      )
      if (resolved.status === 201) record.resolutionManifestId = resolved.json.manifest.manifest_id
    }
  }

  load = runLoad(options.workers, async (loop) => {
    try {
      await oneOutcome(loop)
    } catch (err) {
      if (!(err instanceof Abandoned)) throw err
    }
  })

  const killDelaysMs: number[] = []
  const inFlightAtKills: number[] = []
  const takeoverMs: number[] = []
  // Start order, oldest first: the oldest replica holds the sequencer's lease.
  const age = servers.map((_, i) => i)
  for (let cycle = 0; cycle < options.cycles; cycle++) {
    const [min, max] = options.killAfterMs
    const delay = Math.round(min + Math.random() * (max - min))
    killDelaysMs.push(delay)
    await sleep(delay)
    const victim = age.shift()!
    inFlightAtKills.push(clients[victim]!.inFlight)
    await servers[victim]!.killHard()
    const killedAt = Date.now()
    outputs.push(servers[victim]!.output())
    if (replicas > 1) {
      // Writes go on through the survivors; an audit read answers 200 only once every write committed before it
      // is sequenced, which needs a live sequencer: the time to the first 200 bounds the takeover.
      const survivor = clients[age[0]!]!
      for (;;) {
        const answer = await survivor.call('GET', '/v1/audit/checkpoint', admin)
        if (answer.status === 200) break
        if (answer.status !== 503)
          unexpected.push(`checkpoint during takeover → ${answer.status} ${answer.text}`)
        if (Date.now() - killedAt > 20_000) throw new Error('no replica took the sequencer over')
      }
      takeoverMs.push(Date.now() - killedAt)
    }
    servers[victim] = await startChildServer({ env, port: ports[victim]! })
    age.push(victim)
  }
  await sleep(options.settleMs)
  await load.stop()
  for (const server of servers) outputs.push(server.output())
  assert.deepEqual(load.errors, [], 'the load itself never threw')
  assert.deepEqual(unexpected, [], 'every answer was a success, a 503, or a retry finding its own work')
  assert.ok(
    inFlightAtKills.some((n) => n > 0),
    `some kill hit requests in flight (${inFlightAtKills.join(', ')})`,
  )

  // 1. Everything acknowledged is there, whole, with its audit records.
  const jwks = createLocalJWKSet((await http.call('GET', '/.well-known/jwks.json', null)).json)
  const finals = new Map<string, string>()
  for (const outcome of acked) {
    const got = await http.call('GET', `/v1/outcomes/${outcome.id}`, admin)
    assert.equal(got.status, 200, `acknowledged outcome ${outcome.id}: ${got.text}`)
    assert.equal(got.json.run_id, outcome.runId)
    const versions = new Set(
      got.json.evidence_versions.map((v: { evidence_hash: string }) => v.evidence_hash),
    )
    for (const hash of outcome.evidenceHashes) assert.ok(versions.has(hash), `evidence version ${hash} kept`)

    const records = await http.call('GET', `/v1/audit/records?outcome_id=${outcome.id}&limit=500`, admin)
    assert.equal(records.status, 200, records.text)
    const items = records.json.items as {
      kind: string
      manifest_id: string | null
      data: Record<string, unknown>
    }[]
    const has = (kind: string, match: (r: (typeof items)[number]) => boolean) =>
      items.some((r) => r.kind === kind && match(r))
    assert.ok(
      has('outcome.created', () => true),
      `outcome.created audited for ${outcome.id}`,
    )
    for (const hash of outcome.evidenceHashes.slice(1)) {
      assert.ok(
        has('evidence.appended', (r) => r.data.evidence_hash === hash),
        `evidence ${hash} audited`,
      )
    }
    if (outcome.scenario === 'probe' && outcome.manifestId) {
      assert.ok(
        has('probe.executed', () => true),
        `the probe execution behind ${outcome.manifestId} is audited`,
      )
    }
    for (const id of outcome.interpretationIds) {
      assert.ok(
        has('interpretation.recorded', (r) => r.data.interpretation_id === id),
        `interpretation ${id}`,
      )
    }
    for (const manifestId of [outcome.manifestId, outcome.resolutionManifestId]) {
      if (!manifestId) continue
      assert.ok(
        has('manifest.issued', (r) => r.manifest_id === manifestId),
        `manifest ${manifestId} audited`,
      )
      const envelope = await http.call('GET', `/v1/manifests/${manifestId}`, admin)
      assert.equal(envelope.status, 200, `acknowledged manifest ${manifestId}: ${envelope.text}`)
      const { payload } = await compactVerify(envelope.json.jws, jwks, { algorithms: ['Ed25519', 'EdDSA'] })
      assert.deepEqual(JSON.parse(new TextDecoder().decode(payload)), envelope.json.manifest)
      assert.equal(envelope.json.manifest_digest, clientHash(envelope.json.manifest))
    }
    if (outcome.manifestId) finals.set(outcome.id, outcome.manifestId)
  }

  // 2. One decision per outcome, for every outcome in the store (acknowledged or not).
  let cursor: string | null = null
  let listed = 0
  do {
    const page = await http.call(
      'GET',
      `/v1/outcomes?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      admin,
    )
    assert.equal(page.status, 200, page.text)
    for (const outcome of page.json.items as { outcome_id: string }[]) {
      listed += 1
      const manifests = await http.call(
        'GET',
        `/v1/manifests?outcome_id=${outcome.outcome_id}&limit=500`,
        admin,
      )
      assert.equal(manifests.status, 200, manifests.text)
      const all = manifests.json.items.map((e: { manifest: Record<string, string> }) => e.manifest)
      const machine = all.filter(
        (m: Record<string, string>) => m.directive !== 'REEVALUATE' && m.verdict !== 'HUMAN_RESOLVED',
      )
      const human = all.filter((m: Record<string, string>) => m.verdict === 'HUMAN_RESOLVED')
      assert.ok(machine.length <= 1, `outcome ${outcome.outcome_id} has ${machine.length} final manifests`)
      assert.ok(human.length <= 1, `outcome ${outcome.outcome_id} has ${human.length} resolutions`)
      const acknowledged = finals.get(outcome.outcome_id)
      if (acknowledged)
        assert.equal(machine[0]?.manifest_id, acknowledged, 'the acknowledged decision stands')
    }
    cursor = page.json.next_cursor
  } while (cursor)
  assert.ok(listed >= acked.length)

  // 3. Evaluating again after the crashes returns the acknowledged decision, or one that supersedes it: a
  // resolution (or a later round after a REEVALUATE) may have committed with its answer lost in a kill.
  for (const outcome of acked.filter((o) => o.manifestId).slice(0, 20)) {
    const again = await http.call('POST', `/v1/outcomes/${outcome.id}/evaluate`, keyA)
    assert.equal(again.status, 200, again.text)
    const acknowledged = outcome.resolutionManifestId ?? outcome.manifestId
    let current = again.json.manifest as { manifest_id: string; supersedes: string | null }
    for (let step = 0; current.manifest_id !== acknowledged && current.supersedes && step < 5; step++) {
      const previous = await http.call('GET', `/v1/manifests/${current.supersedes}`, admin)
      assert.equal(previous.status, 200, previous.text)
      current = previous.json.manifest
    }
    assert.equal(current.manifest_id, acknowledged, 'the acknowledged decision stands or is superseded')
  }

  // 4. One unbroken audit chain, through the API and in the store.
  const verify = await http.call('GET', '/v1/audit/verify', admin)
  assert.equal(verify.status, 200, verify.text)
  assert.equal(verify.json.ok, true, verify.text)
  assert.equal(verify.json.checked, verify.json.head_seq)
  const integrity = await assertStoreIntegrity(db.connectionString)

  // 5. No secret ever reached the process output.
  const output = outputs.join('')
  for (const secret of [bootstrapKey, keyA, keyB])
    assert.ok(!output.includes(secret), 'a key leaked to the logs')

  return {
    cycles: options.cycles,
    takeoverMs,
    killDelaysMs,
    inFlightAtKills,
    requests,
    networkFailures,
    acked: {
      outcomes: acked.length,
      evidence: acked.reduce((n, o) => n + o.evidenceHashes.length - 1, 0),
      interpretations: acked.reduce((n, o) => n + o.interpretationIds.length, 0),
      manifests: acked.filter((o) => o.manifestId).length,
      resolutions: acked.filter((o) => o.resolutionManifestId).length,
      probeDecisions: acked.filter((o) => o.scenario === 'probe' && o.manifestId).length,
    },
    auditRecords: integrity.auditRecords,
  }
}
