import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, type TestApp } from './app.ts'
import { createTestDatabase } from './database.ts'
import { CRITERION, createOutcome, interpret } from './fixtures.ts'
import { assertStoreIntegrity } from './integrity.ts'
import { waitUntil } from './load.ts'

/**
 * Races across replicas (evaluation is idempotent and serialized per outcome, on any number of replicas):
 * several app instances on one database receive, for every outcome at once, a storm of evaluate calls with
 * late interpretations and competing resolutions mixed in. Every outcome must end with exactly one machine
 * decision (plus at most one human resolution), every answer must agree with it, and the audit log must be
 * one gapless, unforked chain. In the middle of the first storm the replica holding the audit sequencer's lease
 * loses its sequencer as a crash would (the lease is left to expire): another replica must take over, and nothing
 * committed may be left unsequenced.
 */

export interface ReplicaScenarioOptions {
  replicas: number
  outcomes: number
  evaluationsPerOutcome: number
  /** Resolutions racing inside the storm, and again afterwards, per HALTed outcome. */
  resolutionsPerWave: number
  /** Outcomes stormed at the same time (the embedded database serves one transaction at a time). */
  outcomesPerWave: number
}

export interface ReplicaReport {
  replicas: number
  outcomes: number
  evaluations: number
  lateInterpretations: { landed: number; dissent: number }
  /** ms from the crash of the sequencer's lease holder until another replica held the lease. */
  sequencerTakeoverMs: number
  resolutions: { won: number; refused: number }
  auditRecords: number
}

type Scenario = 'halt' | 'policy' | 'arbiter'

interface Manifest {
  manifest_id: string
  verdict: string
  directive: string
  supersedes: string | null
  interpretations: { orchestrator_id: string; revision: number }[]
}

interface Call {
  kind: 'evaluate' | 'late-c' | 'late-a' | 'resolution'
  response: LightMyRequestResponse
}

const isMachineFinal = (m: Manifest) => m.directive !== 'REEVALUATE' && m.verdict !== 'HUMAN_RESOLVED'

export async function runReplicaScenario(
  t: Pick<TestContext, 'after' | 'diagnostic'>,
  options: ReplicaScenarioOptions,
): Promise<ReplicaReport> {
  const db = await createTestDatabase()
  const replicas: TestApp[] = []
  for (let i = 0; i < options.replicas; i++) replicas.push(await buildTestApp(t, { database: db }))
  // Registered after the apps: hooks run in order, so the apps close before their database goes.
  t.after(() => db.stop())
  const [first] = replicas as [TestApp]
  const keys = {
    a: await first.key('orchestrator', ['orch-a']),
    b: await first.key('orchestrator', ['orch-b']),
    c: await first.key('orchestrator', ['orch-c']),
    ops: await first.key('ops'),
  }
  const replica = (i: number) => replicas[i % replicas.length]!

  const outcomes: { id: string; scenario: Scenario }[] = []
  for (let i = 0; i < options.outcomes; i++) {
    const scenario = (['halt', 'policy', 'halt', 'arbiter'] as const)[i % 4]!
    const outcome = await createOutcome(replica(i), keys.a, {
      fallback_policy: scenario === 'policy' ? 'strictest_wins' : 'escalate',
      ...(scenario === 'arbiter' ? { arbiter_orchestrator_id: 'orch-b' } : {}),
    })
    await interpret(replica(i + 1), keys.a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: scenario === 'policy' ? 'partial' : 'failure',
    })
    await interpret(replica(i + 2), keys.b, outcome.outcome_id, {
      orchestrator_id: 'orch-b',
      outcome_interpretation: 'success',
      success_criterion: scenario === 'halt' ? { require: ['exit_code == 0'] } : CRITERION,
    })
    outcomes.push({ id: outcome.outcome_id, scenario })
  }

  const resolve = (i: number, id: string) =>
    replica(i).request(keys.ops, {
      method: 'POST',
      url: `/v1/outcomes/${id}/resolution`,
      payload: { outcome: 'failure', rationale: `settled by ops (attempt ${i})` },
    })

  /** One outcome's storm: evaluate calls on every replica, with late submissions and resolutions in between. */
  const storm = async (id: string, scenario: Scenario, headStartMs: number): Promise<Call[]> => {
    const n = options.evaluationsPerOutcome
    const extras = new Map<number, Call['kind'][]>()
    // Half of the extras go out before the first evaluate call, so some land before the decision and some after.
    const put = (kind: Call['kind']) => {
      const at = Math.random() < 0.5 ? 0 : Math.floor(Math.random() * (n + 1))
      extras.set(at, [...(extras.get(at) ?? []), kind])
    }
    put('late-c')
    put('late-a')
    // The resolutions go out together, at one point of the second half: a real race among themselves, and
    // (when they come before the HALT is issued) with the evaluations.
    if (scenario === 'halt') {
      const at = Math.floor(n / 2 + Math.random() * (n / 2 + 1))
      extras.set(at, [
        ...(extras.get(at) ?? []),
        ...Array<Call['kind']>(options.resolutionsPerWave).fill('resolution'),
      ])
    }
    const calls: Promise<Call>[] = []
    const send = (kind: Call['kind'], i: number) => {
      const target = replica(i)
      let sent: Promise<LightMyRequestResponse>
      if (kind === 'evaluate') {
        sent = target.request(i % 2 ? keys.a : keys.b, { method: 'POST', url: `/v1/outcomes/${id}/evaluate` })
      } else if (kind === 'late-c') {
        sent = target.request(keys.c, {
          method: 'POST',
          url: `/v1/outcomes/${id}/interpretations`,
          payload: {
            orchestrator_id: 'orch-c',
            outcome_interpretation: 'failure',
            success_criterion: CRITERION,
          },
        })
      } else if (kind === 'late-a') {
        sent = target.request(keys.a, {
          method: 'POST',
          url: `/v1/outcomes/${id}/interpretations`,
          payload: {
            orchestrator_id: 'orch-a',
            outcome_interpretation: scenario === 'policy' ? 'partial' : 'failure',
            success_criterion: CRITERION,
            rationale: 'second look',
          },
        })
      } else {
        sent = resolve(i, id)
      }
      calls.push(sent.then((response) => ({ kind, response })))
    }
    for (let i = 0; i <= n; i++) {
      for (const kind of extras.get(i) ?? []) send(kind, i + 1)
      // A few milliseconds' head start for what went out first, on some outcomes, so that both orders occur.
      if (i === 0 && headStartMs > 0) await sleep(headStartMs)
      if (i < n) send('evaluate', i)
    }
    return Promise.all(calls)
  }

  const sequencerOf = (r: TestApp) => r.app.services.auditLog.sequencer
  const crashed = replicas.find((r) => sequencerOf(r).isLeader)
  assert.ok(crashed, 'one replica holds the sequencer lease')
  let crashedAt = 0
  const results = new Map<string, Call[]>()
  for (let w = 0; w < outcomes.length; w += options.outcomesPerWave) {
    const wave = outcomes.slice(w, w + options.outcomesPerWave)
    const crash =
      w === 0
        ? sleep(Math.random() * 50).then(async () => {
            await sequencerOf(crashed).stop({ handOver: false })
            crashedAt = Date.now()
          })
        : undefined
    const answered = await Promise.all(
      wave.map((o, i) => storm(o.id, o.scenario, (w + i) % 2 ? 0 : Math.random() * 15)),
    )
    await crash
    wave.forEach((o, i) => {
      results.set(o.id, answered[i]!)
    })
  }

  // Another replica takes the sequencer over once the crashed holder's lease expires.
  await waitUntil(
    'another replica to take the sequencer over',
    async () => replicas.some((r) => r !== crashed && sequencerOf(r).isLeader),
    { timeoutMs: 10_000, intervalMs: 20 },
  )
  const successor = replicas.find((r) => r !== crashed && sequencerOf(r).isLeader)!
  const takeoverMs = sequencerOf(successor).leaderSince! - crashedAt
  assert.ok(takeoverMs < 5_000, `another replica took the sequencer over ${takeoverMs} ms after the crash`)

  // A second wave of resolutions once every HALT exists: across both waves, exactly one wins.
  for (const o of outcomes) {
    const wave = await Promise.all(
      Array.from({ length: o.scenario === 'halt' ? options.resolutionsPerWave : 2 }, (_, i) =>
        resolve(i, o.id),
      ),
    )
    results.get(o.id)!.push(...wave.map((response) => ({ kind: 'resolution' as const, response })))
  }

  const report: ReplicaReport = {
    replicas: options.replicas,
    outcomes: outcomes.length,
    evaluations: 0,
    lateInterpretations: { landed: 0, dissent: 0 },
    sequencerTakeoverMs: takeoverMs,
    resolutions: { won: 0, refused: 0 },
    auditRecords: 0,
  }
  for (const { id, scenario } of outcomes) {
    const calls = results.get(id)!
    const statuses = calls.map((c) => `${c.kind} ${c.response.statusCode}`)
    assert.ok(
      calls.every((c) => c.response.statusCode < 500),
      `no 5xx for ${id}: ${statuses.filter((s) => / 5\d\d$/.test(s)).join(', ')}`,
    )

    const listed = await first.request(keys.ops, {
      method: 'GET',
      url: `/v1/manifests?outcome_id=${id}&limit=500`,
    })
    assert.equal(listed.statusCode, 200, listed.body)
    const manifests = (listed.json().items as { manifest: Manifest }[]).map((e) => e.manifest)
    const machine = manifests.filter(isMachineFinal)
    const human = manifests.filter((m) => m.verdict === 'HUMAN_RESOLVED')
    assert.equal(machine.length, 1, `exactly one machine decision for ${id} (${scenario})`)
    const decision = machine[0]!
    const expectedVerdict = { halt: 'CRITERIA_DIFFER', policy: 'POLICY_RESOLVES', arbiter: 'ARBITER_DECIDES' }
    assert.equal(decision.verdict, expectedVerdict[scenario])

    // Every evaluate answer is that decision (or, after a resolution won, the resolution).
    const evaluations = calls.filter((c) => c.kind === 'evaluate')
    report.evaluations += evaluations.length
    const allowed = new Set([decision.manifest_id, ...human.map((m) => m.manifest_id)])
    for (const c of evaluations) {
      assert.equal(c.response.statusCode, 200, c.response.body)
      assert.ok(allowed.has(c.response.json().manifest.manifest_id), 'evaluate answers with the decision')
    }
    const digests = new Map<string, Set<string>>()
    for (const c of evaluations) {
      const { manifest, manifest_digest } = c.response.json()
      digests.set(manifest.manifest_id, (digests.get(manifest.manifest_id) ?? new Set()).add(manifest_digest))
    }
    for (const set of digests.values())
      assert.equal(set.size, 1, 'every replica returns the same signed bytes')

    // Late submissions either landed before the decision (201, and the decision counts them) or after it
    // (409 naming the decision, recorded as dissent, and the decision ignores them). Never lost, never both.
    for (const c of calls.filter((x) => x.kind === 'late-c' || x.kind === 'late-a')) {
      const orchestrator = c.kind === 'late-c' ? 'orch-c' : 'orch-a'
      const seen = decision.interpretations.find((i) => i.orchestrator_id === orchestrator)
      if (c.response.statusCode === 201) {
        report.lateInterpretations.landed += 1
        const revision = c.response.json().revision
        assert.equal(seen?.revision, revision, `${orchestrator}'s landed revision is in the decision`)
      } else {
        assert.equal(c.response.statusCode, 409, c.response.body)
        report.lateInterpretations.dissent += 1
        assert.ok(allowed.has(c.response.json().manifest_id), 'the dissent names the decision')
        if (c.kind === 'late-c') assert.equal(seen, undefined, 'a dissent never joins the decision')
        else assert.equal(seen?.revision, 1, 'a dissent never revises the decision')
      }
    }

    // Resolutions: exactly one winner for a HALT, none otherwise; every loser is a 409.
    const resolutions = calls.filter((c) => c.kind === 'resolution')
    const won = resolutions.filter((c) => c.response.statusCode === 201)
    report.resolutions.won += won.length
    report.resolutions.refused += resolutions.length - won.length
    assert.ok(
      resolutions.every((c) => c.response.statusCode === 201 || c.response.statusCode === 409),
      `resolutions answer 201 or 409: ${resolutions.map((c) => c.response.statusCode).join(',')}`,
    )
    assert.equal(won.length, scenario === 'halt' ? 1 : 0, `resolution winners for ${id} (${scenario})`)
    assert.equal(human.length, won.length, 'one HUMAN_RESOLVED manifest per winning resolution')
    if (won.length === 1) {
      const resolution = won[0]!.response.json().manifest
      assert.equal(resolution.manifest_id, human[0]!.manifest_id)
      assert.equal(resolution.supersedes, decision.manifest_id)
      for (const r of replicas) {
        const again = await r.request(keys.a, { method: 'POST', url: `/v1/outcomes/${id}/evaluate` })
        assert.equal(
          again.json().manifest.manifest_id,
          resolution.manifest_id,
          'evaluate returns the resolution',
        )
      }
    }
  }

  const open = await first.request(keys.ops, { method: 'GET', url: '/v1/escalations?status=open&limit=500' })
  assert.deepEqual(open.json().items, [], 'every escalation was resolved exactly once')
  const closed = await first.request(keys.ops, {
    method: 'GET',
    url: '/v1/escalations?status=resolved&limit=500',
  })
  assert.equal(closed.json().items.length, outcomes.filter((o) => o.scenario === 'halt').length)

  const survivor = replicas.find((r) => r !== crashed)!
  const verify = await survivor.request(keys.ops, { method: 'GET', url: '/v1/audit/verify' })
  assert.equal(verify.statusCode, 200, verify.body)
  const holders = replicas.filter((r) => sequencerOf(r).isLeader)
  assert.equal(holders.length, 1, 'one sequencer lease holder')
  assert.notEqual(holders[0], crashed, 'another replica took the sequencer over')
  assert.equal(verify.json().ok, true, verify.body)
  const integrity = await assertStoreIntegrity(db.connectionString)
  assert.equal(integrity.auditRecords, verify.json().head_seq)
  report.auditRecords = integrity.auditRecords
  return report
}
