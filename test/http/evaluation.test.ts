import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { compactVerify, createLocalJWKSet } from 'jose'
import {
  outcomeForDecision,
  splitOutcomeForDecision,
} from '../../src/cases/outcome/interpretation-repository.ts'
import { outcomeCase } from '../../src/cases/outcome/kind.ts'
import { outcomeStateUpdateIf } from '../../src/cases/outcome/repository.ts'
import { execute, queryFirst } from '../../src/db/statement.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'
import {
  clientHash,
  createOutcome,
  disputedOutcome,
  EVIDENCE,
  evaluate,
  haltedOutcome,
  interpret,
} from '../helpers/fixtures.ts'

async function verifyWithJose(
  app: TestApp,
  envelope: { manifest: unknown; manifest_digest: string; jws: string },
) {
  const jwks = (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
  const { payload, protectedHeader } = await compactVerify(envelope.jws, createLocalJWKSet(jwks), {
    algorithms: ['Ed25519', 'EdDSA'],
  })
  assert.equal(protectedHeader.alg, 'Ed25519')
  assert.deepEqual(JSON.parse(new TextDecoder().decode(payload)), envelope.manifest)
  assert.equal(envelope.manifest_digest, clientHash(envelope.manifest))
  return protectedHeader.kid
}

async function setup(t: Parameters<typeof buildTestApp>[0]) {
  const app = await buildTestApp(t)
  const a = await app.key('orchestrator', ['orch-a'])
  const b = await app.key('orchestrator', ['orch-b'])
  return { app, a, b }
}

describe('POST /v1/outcomes/:id/evaluate', () => {
  it('issues SINGLE_ORCHESTRATOR, signed and verifiable with jose against the JWKS', async (t) => {
    const { app, a } = await setup(t)
    const outcome = await createOutcome(app, a)
    await interpret(app, a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    const envelope = await evaluate(app, a, outcome.outcome_id)
    const m = envelope.manifest
    assert.equal(m.verdict, 'SINGLE_ORCHESTRATOR')
    assert.equal(m.directive, 'PROCEED')
    assert.equal(m.resolved_outcome, 'success')
    assert.equal(m.action_owner, 'orch-a')
    assert.equal(m.subagent_outcome_evidence_hash, outcome.evidence_hash)
    assert.equal(m.interpretation_divergence_receipt, null)
    assert.equal(m.ground_truth_arbiter_predicate, null)
    assert.equal(m.supersedes, null)
    assert.equal(m.resolution, null)
    assert.deepEqual(m.missing_orchestrators, [])
    assert.deepEqual(
      Object.keys(m).sort(),
      [
        'action_owner',
        'kind',
        'ground_truth_arbiter_predicate',
        'interpretation_divergence_receipt',
        'interpretations',
        'issued_at',
        'manifest_id',
        'missing_orchestrators',
        'outcome_id',
        'resolution',
        'resolved_outcome',
        'run_id',
        'subagent_id',
        'subagent_outcome_evidence_hash',
        'supersedes',
        'verdict',
        'directive',
      ].sort(),
    )
    const kid = await verifyWithJose(app, envelope)
    assert.equal(kid, app.app.signingKey.kid)
    assert.equal(envelope.audit_seq, null, 'the issuing answer comes before the sequencer places the record')
    // Any audit read waits until the record is placed; from then on every envelope carries its seq.
    const records = (
      await app.request(app.adminKey, { method: 'GET', url: '/v1/audit/records?kind=manifest.issued' })
    )
      .json()
      .items.filter((r: { manifest_id: string }) => r.manifest_id === m.manifest_id)
    const placed = { ...envelope, audit_seq: records[0].seq }
    const fetched = (await app.request(a, { method: 'GET', url: `/v1/manifests/${m.manifest_id}` })).json()
    assert.deepEqual(fetched, placed)
    const outcomeNow = (
      await app.request(a, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })
    ).json()
    assert.equal(outcomeNow.status, 'decided')
    assert.equal(outcomeNow.manifest_id, m.manifest_id)
    // Evaluate again: the final manifest, unchanged.
    assert.deepEqual(await evaluate(app, a, outcome.outcome_id), placed)
  })

  it('answers 202 with the missing orchestrators until all report or the deadline passes', async (t) => {
    const { app, a, b } = await setup(t)
    const waiting = await createOutcome(app, a, { expected_orchestrators: ['orch-a', 'orch-b'] })
    await interpret(app, a, waiting.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    assert.deepEqual(await evaluate(app, a, waiting.outcome_id, 202), {
      status: 'pending',
      missing_orchestrators: ['orch-b'],
    })
    await interpret(app, b, waiting.outcome_id, {
      orchestrator_id: 'orch-b',
      outcome_interpretation: 'success',
    })
    const agreed = await evaluate(app, a, waiting.outcome_id)
    assert.equal(agreed.manifest.verdict, 'AGREED')
    assert.equal(agreed.manifest.resolved_outcome, 'success')
    assert.equal(agreed.manifest.action_owner, 'orch-a', 'the first to report among those agreeing')

    const late = await createOutcome(app, a, {
      expected_orchestrators: ['orch-a', 'orch-b', 'orch-c'],
      deadline: '2000-01-01T00:00:00Z',
    })
    await interpret(app, a, late.outcome_id, { orchestrator_id: 'orch-a', outcome_interpretation: 'partial' })
    const past = await evaluate(app, a, late.outcome_id)
    assert.equal(past.manifest.verdict, 'SINGLE_ORCHESTRATOR')
    assert.deepEqual(past.manifest.missing_orchestrators, ['orch-b', 'orch-c'])

    const nobody = await createOutcome(app, a)
    const conflict = await app.request(a, {
      method: 'POST',
      url: `/v1/outcomes/${nobody.outcome_id}/evaluate`,
    })
    assert.equal(conflict.statusCode, 409)
  })

  it('keeps the criteria receipt when orchestrators agree under different criteria', async (t) => {
    const { app, a, b } = await setup(t)
    const outcome = await disputedOutcome(app, a, b, {
      orchA: { outcome_interpretation: 'success' },
      orchB: {
        outcome_interpretation: 'success',
        success_criterion: { require: ['exit_code == 0', 'ledger settled'], min_confidence: 0.8 },
      },
    })
    const { manifest } = await evaluate(app, a, outcome.outcome_id)
    assert.equal(manifest.verdict, 'AGREED', 'agreement never falls through to CRITERIA_DIFFER')
    assert.equal(manifest.directive, 'PROCEED')
    const receipt = manifest.interpretation_divergence_receipt
    assert.equal(receipt.kind, 'criteria')
    assert.equal(receipt.pairs.length, 1)
    assert.deepEqual(receipt.pairs[0].criteria_divergence, [
      { pointer: '/require/1', a: 'receipt present', b: 'ledger settled' },
    ])
    const { receipt_digest, ...rest } = receipt
    assert.equal(receipt_digest, clientHash(rest))
  })

  it('lets the designated arbiter decide and names it action owner', async (t) => {
    const { app, a, b } = await setup(t)
    const outcome = await disputedOutcome(app, a, b, {
      outcome: { arbiter_orchestrator_id: 'orch-b' },
      orchA: { intended_action: { kind: 'compensate', resources: ['refund:re_1'] } },
      orchB: { intended_action: { kind: 'proceed', resources: ['refund:re_1'] } },
    })
    const { manifest } = await evaluate(app, a, outcome.outcome_id)
    assert.equal(manifest.verdict, 'ARBITER_DECIDES')
    assert.equal(manifest.resolved_outcome, 'success')
    assert.equal(manifest.action_owner, 'orch-b')
    assert.equal(manifest.interpretation_divergence_receipt.kind, 'interpretation')
    assert.equal(manifest.interpretation_divergence_receipt.actions_disjoint, false)
    assert.deepEqual(
      manifest.interpretations.map((i: { orchestrator_id: string }) => i.orchestrator_id),
      ['orch-a', 'orch-b'],
    )
  })

  it('proceeds without a resolved outcome when actions are disjoint', async (t) => {
    const { app, a, b } = await setup(t)
    const outcome = await disputedOutcome(app, a, b, {
      orchA: { intended_action: { kind: 'retry', resources: ['queue:a'] } },
      orchB: { intended_action: { kind: 'proceed', resources: ['queue:b'] } },
    })
    const { manifest } = await evaluate(app, a, outcome.outcome_id)
    assert.equal(manifest.verdict, 'DISJOINT_ACTIONS')
    assert.equal(manifest.directive, 'PROCEED')
    assert.equal(manifest.resolved_outcome, null)
    assert.equal(manifest.action_owner, null)
    assert.equal(manifest.interpretation_divergence_receipt.actions_disjoint, true)
  })

  it('applies strictest_wins and halts otherwise, opening an escalation; late dissent is 409 and recorded', async (t) => {
    const { app, a, b } = await setup(t)
    const strict = await disputedOutcome(app, a, b, {
      outcome: { fallback_policy: 'strictest_wins' },
      orchA: { outcome_interpretation: 'partial' },
    })
    const policy = (await evaluate(app, a, strict.outcome_id)).manifest
    assert.equal(policy.verdict, 'POLICY_RESOLVES')
    assert.equal(policy.resolved_outcome, 'partial')
    assert.equal(policy.action_owner, 'orch-a')

    const { outcome: halting, manifest: halt } = await haltedOutcome(app, a, b)
    assert.equal(halt.verdict, 'CRITERIA_DIFFER')
    assert.equal(halt.directive, 'HALT')
    assert.equal(halt.resolved_outcome, null)
    assert.equal(halt.action_owner, null)
    const pair = halt.interpretation_divergence_receipt.pairs[0]
    assert.deepEqual(pair.criteria_divergence, [
      { pointer: '/min_confidence', a: 0.8 },
      { pointer: '/require/1', a: 'receipt present' },
    ])

    const dissent = await app.request(b, {
      method: 'POST',
      url: `/v1/outcomes/${halting.outcome_id}/interpretations`,
      payload: { orchestrator_id: 'orch-b', outcome_interpretation: 'failure', success_criterion: {} },
    })
    assert.equal(dissent.statusCode, 409)
    assert.equal(dissent.json().manifest_id, halt.manifest_id)
    assert.equal((await evaluate(app, a, halting.outcome_id)).manifest.manifest_id, halt.manifest_id)
    const ops = await app.key('ops')
    const story = await app.request(ops, { method: 'GET', url: `/v1/audit/outcomes/${halting.outcome_id}` })
    assert.equal(story.statusCode, 200)
    assert.ok(story.json().records.some((r: { kind: string }) => r.kind === 'dissent.recorded'))
    const { rows } = await app.app.db.query('SELECT orchestrator_id FROM dissents WHERE outcome_id = $1', [
      halting.outcome_id,
    ])
    assert.deepEqual(rows, [{ orchestrator_id: 'orch-b' }])
  })

  it('asks to REEVALUATE when the same criteria judged different evidence, twice at most', async (t) => {
    const { app, a, b } = await setup(t)
    const outcome = await createOutcome(app, a)
    const first = outcome.evidence_hash
    const added = await app.request(a, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/evidence`,
      payload: { evidence: [{ kind: 'log', content: 'ledger: refund pending' }] },
    })
    const second = added.json().evidence_hash
    await interpret(app, a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
      evidence_hash: first,
    })
    await interpret(app, b, outcome.outcome_id, {
      orchestrator_id: 'orch-b',
      outcome_interpretation: 'failure',
    })
    const round1 = (await evaluate(app, a, outcome.outcome_id)).manifest
    assert.equal(round1.verdict, 'CRITERIA_MATCH_EVIDENCE_DIFFERS')
    assert.equal(round1.directive, 'REEVALUATE')
    assert.equal(round1.subagent_outcome_evidence_hash, second)
    assert.deepEqual(round1.interpretation_divergence_receipt.pairs[0].evidence_divergence, {
      a_evidence_hash: first,
      b_evidence_hash: second,
      only_in_a: [],
      only_in_b: [clientHash({ kind: 'log', content: 'ledger: refund pending' })],
    })
    // Unchanged inputs: the same manifest, no new round.
    assert.equal((await evaluate(app, b, outcome.outcome_id)).manifest.manifest_id, round1.manifest_id)
    let current = (await app.request(a, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })).json()
    assert.equal(current.reevaluation_rounds, 1)
    assert.equal(current.status, 'open')

    // Round 2: orch-a revises against the same old evidence with a new rationale.
    await interpret(app, a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
      evidence_hash: first,
      rationale: 'still fine',
    })
    const round2 = (await evaluate(app, a, outcome.outcome_id)).manifest
    assert.equal(round2.directive, 'REEVALUATE')
    assert.equal(round2.supersedes, round1.manifest_id)
    await interpret(app, a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
      evidence_hash: first,
      rationale: 'really fine',
    })
    const final = (await evaluate(app, a, outcome.outcome_id)).manifest
    assert.equal(final.verdict, 'CRITERIA_MATCH_EVIDENCE_DIFFERS')
    assert.equal(final.directive, 'HALT', 'after two rounds the disagreement escalates')
    current = (await app.request(a, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })).json()
    assert.equal(current.status, 'halted')
    assert.equal(current.reevaluation_rounds, 2)
  })

  it('writes no decision read before an input landed: every interpretation gives the outcome a new version', async (t) => {
    const { app, a, b } = await setup(t)
    const db = app.app.services.db
    const outcome = await createOutcome(app, a, { expected_orchestrators: ['orch-a', 'orch-b'] })
    const id = outcome.outcome_id
    const version = async () => splitOutcomeForDecision(await queryFirst(db, outcomeForDecision(id)))!.version
    const versions = [await version()]
    // A first interpretation (one statement), then a revision (the transaction): each moves the version.
    await interpret(app, a, id, { orchestrator_id: 'orch-a', outcome_interpretation: 'failure' })
    versions.push(await version())
    await interpret(app, a, id, { orchestrator_id: 'orch-a', outcome_interpretation: 'success' })
    versions.push(await version())
    assert.equal(new Set(versions).size, 3)
    // A decision made from what was read before the revision writes nothing.
    const stale = outcomeStateUpdateIf(id, versions[1]!, {
      status: 'decided',
      reevaluation_rounds: 0,
      manifestId: randomUUID(),
    })
    assert.equal((await execute(db, stale)).rowCount, 0)
    await interpret(app, b, id, { orchestrator_id: 'orch-b', outcome_interpretation: 'success' })
    const { manifest } = await evaluate(app, a, id)
    assert.deepEqual(
      manifest.interpretations.map((i: { orchestrator_id: string; revision: number }) => [
        i.orchestrator_id,
        i.revision,
      ]),
      [
        ['orch-a', 2],
        ['orch-b', 1],
      ],
    )
  })

  it("reads an outcome and its decision's inputs in one statement, exactly as a transaction reads them", async (t) => {
    const { app, a, b } = await setup(t)
    const db = app.app.services.db
    const outcome = await createOutcome(app, a, { expected_orchestrators: ['orch-a', 'orch-b'] })
    const id = outcome.outcome_id
    await interpret(app, a, id, { orchestrator_id: 'orch-a', outcome_interpretation: 'failure' })
    await interpret(app, a, id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
      intended_action: { kind: 'proceed', resources: ['refund:1'] },
      rationale: 'revised',
    })
    await interpret(app, b, id, {
      orchestrator_id: 'orch-b',
      outcome_interpretation: 'partial',
      success_criterion: { require: ['receipt present'], weights: { receipt: 0.5 }, notes: 'ünïcode ✓' },
    })
    const now = new Date()
    const read = await outcomeCase.optimistic!.read(db, id, now)
    assert.ok(read?.input, 'the read brings the inputs')
    const input = await outcomeCase.loadInput(db, read.case, now, undefined)
    assert.deepEqual(read.input, input)
    assert.deepEqual(
      input.interpretations.map((i) => [i.orchestrator_id, i.revision, i.outcome_interpretation]),
      [
        ['orch-a', 2, 'success'],
        ['orch-b', 1, 'partial'],
      ],
    )
    assert.equal(await outcomeCase.optimistic!.read(db, randomUUID(), now), undefined)
  })

  it('returns one manifest to 20 concurrent callers', async (t) => {
    const { app, a, b } = await setup(t)
    const outcome = await disputedOutcome(app, a, b)
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.request(i % 2 ? a : b, { method: 'POST', url: `/v1/outcomes/${outcome.outcome_id}/evaluate` }),
      ),
    )
    assert.deepEqual(new Set(responses.map((r) => r.statusCode)), new Set([200]))
    assert.equal(new Set(responses.map((r) => r.json().manifest.manifest_id)).size, 1)
    const { rows } = await app.app.db.query(
      `SELECT count(*)::int AS n FROM manifests WHERE case_kind = 'outcome' AND case_id = $1`,
      [outcome.outcome_id],
    )
    assert.equal(rows[0].n, 1)
  })
})

describe('several service instances on one database', () => {
  it('agree on one manifest per outcome when 3 instances evaluate at once', async (t) => {
    const db = await createTestDatabase()
    t.after(() => db.stop())
    const instances = [
      await buildTestApp(t, { database: db }),
      await buildTestApp(t, { database: db }),
      await buildTestApp(t, { database: db }),
    ]
    const [first] = instances
    const a = await first!.key('orchestrator', ['orch-a'])
    const b = await first!.key('orchestrator', ['orch-b'])
    const outcomes = []
    for (let i = 0; i < 4; i++) {
      const outcome = await createOutcome(first!, a)
      await interpret(first!, a, outcome.outcome_id, {
        orchestrator_id: 'orch-a',
        outcome_interpretation: 'failure',
      })
      await interpret(first!, b, outcome.outcome_id, {
        orchestrator_id: 'orch-b',
        outcome_interpretation: 'partial',
      })
      outcomes.push(outcome.outcome_id)
    }
    const calls = outcomes.flatMap((id) =>
      Array.from({ length: 9 }, (_, i) =>
        instances[i % 3]!.request(a, { method: 'POST', url: `/v1/outcomes/${id}/evaluate` }).then((r) => ({
          id,
          r,
        })),
      ),
    )
    const results = await Promise.all(calls)
    for (const id of outcomes) {
      const mine = results.filter((x) => x.id === id)
      assert.ok(mine.every((x) => x.r.statusCode === 200))
      assert.equal(new Set(mine.map((x) => x.r.json().manifest.manifest_id)).size, 1)
    }
    const { rows } = await first!.app.db.query('SELECT count(*)::int AS n FROM manifests')
    assert.equal(rows[0].n, outcomes.length)
  })

  it('keeps old manifests verifiable after the signing key rotates', async (t) => {
    const db = await createTestDatabase()
    t.after(() => db.stop())
    const before = await buildTestApp(t, { database: db })
    const a = await before.key('orchestrator', ['orch-a'])
    const o1 = await createOutcome(before, a)
    await interpret(before, a, o1.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    const old = await evaluate(before, a, o1.outcome_id)
    const after = await buildTestApp(t, { database: db })
    const o2 = await createOutcome(after, a, { evidence: [EVIDENCE[1]] })
    await interpret(after, a, o2.outcome_id, { orchestrator_id: 'orch-a', outcome_interpretation: 'success' })
    const fresh = await evaluate(after, a, o2.outcome_id)
    const oldKid = await verifyWithJose(after, old)
    const newKid = await verifyWithJose(after, fresh)
    assert.equal(oldKid, before.app.signingKey.kid)
    assert.equal(newKid, after.app.signingKey.kid)
    assert.notEqual(oldKid, newKid)
    const jwks = (await after.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
    assert.deepEqual(jwks.keys.map((k: { kid: string }) => k.kid).sort(), [oldKid, newKid].sort())
  })
})
