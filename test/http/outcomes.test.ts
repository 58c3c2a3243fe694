import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import {
  CRITERION,
  clientEvidenceHash,
  clientHash,
  createOutcome,
  EVIDENCE,
  interpret,
  uniqueRun,
} from '../helpers/fixtures.ts'

describe('POST /v1/outcomes', () => {
  it('stores the evidence with the hash a client computes, idempotently on (subagent_id, run_id)', async (t) => {
    const app = await buildTestApp(t)
    const orch = await app.key('orchestrator', ['orch-a'])
    const body = {
      subagent_id: 'refund-agent',
      run_id: uniqueRun(),
      // Duplicates collapse; order does not matter.
      evidence: [EVIDENCE[1], EVIDENCE[0], EVIDENCE[1]],
      expected_orchestrators: ['orch-b', 'orch-a'],
      deadline: '2030-01-01T00:00:00Z',
      arbiter_orchestrator_id: 'orch-a',
      fallback_policy: 'strictest_wins',
    }
    const first = await app.request(orch, { method: 'POST', url: '/v1/outcomes', payload: body })
    assert.equal(first.statusCode, 201, first.body)
    const outcome = first.json()
    assert.equal(outcome.evidence_hash, clientEvidenceHash(EVIDENCE))
    assert.equal(outcome.status, 'open')
    assert.deepEqual(outcome.expected_orchestrators, ['orch-a', 'orch-b'])
    assert.equal(outcome.deadline, '2030-01-01T00:00:00.000Z')
    assert.equal(outcome.evidence.length, 2)
    assert.deepEqual(outcome.evidence_versions[0].item_hashes, EVIDENCE.map(clientHash).sort())
    assert.equal(outcome.manifest_id, null)
    assert.equal(outcome.probe, null)
    assert.equal(outcome.reevaluation_rounds, 0)

    const again = await app.request(orch, { method: 'POST', url: '/v1/outcomes', payload: body })
    assert.equal(again.statusCode, 200)
    assert.equal(again.json().outcome_id, outcome.outcome_id)

    const different = await app.request(orch, {
      method: 'POST',
      url: '/v1/outcomes',
      payload: { ...body, evidence: [EVIDENCE[0]] },
    })
    assert.equal(different.statusCode, 409)
    assert.equal(different.json().outcome_id, outcome.outcome_id)

    const fetched = await app.request(orch, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })
    assert.deepEqual(fetched.json(), outcome)
  })

  it('creates one outcome when the same body arrives 10 times at once', async (t) => {
    const app = await buildTestApp(t)
    const body = { subagent_id: 'refund-agent', run_id: uniqueRun(), evidence: EVIDENCE }
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        app.request(app.adminKey, { method: 'POST', url: '/v1/outcomes', payload: body }),
      ),
    )
    assert.deepEqual(
      responses.map((r) => r.statusCode).sort(),
      [200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
    )
    assert.equal(new Set(responses.map((r) => r.json().outcome_id)).size, 1)
  })

  it('rejects bad bodies with 400 and names the field', async (t) => {
    const app = await buildTestApp(t)
    const cases: [unknown, string][] = [
      [{ subagent_id: 'a', run_id: 'b', evidence: [] }, 'body/evidence'],
      [{ subagent_id: 'a', run_id: 'b', evidence: [{ kind: 'bogus', content: 1 }] }, 'body/evidence/0/kind'],
      [
        { subagent_id: 'a', run_id: 'b', evidence: [{ kind: 'log', content: 1, extra: true }] },
        'body/evidence/0/extra',
      ],
      [{ subagent_id: 'a', run_id: 'b', evidence: [{ kind: 'log' }] }, 'body/evidence/0/content'],
      [{ subagent_id: 'a', run_id: 'b', evidence: EVIDENCE, deadline: 'tomorrow' }, 'body/deadline'],
      [
        { subagent_id: 'a', run_id: 'b', evidence: EVIDENCE, fallback_policy: 'coin' },
        'body/fallback_policy',
      ],
      [
        { subagent_id: 'a', run_id: 'b', evidence: [{ kind: 'log', content: 'nul\u0000' }] },
        'body/evidence/0/content',
      ],
    ]
    for (const [payload, path] of cases) {
      const response = await app.request(app.adminKey, {
        method: 'POST',
        url: '/v1/outcomes',
        payload: payload as object,
      })
      assert.equal(response.statusCode, 400, `${path}: ${response.body}`)
      assert.ok(
        response.json().errors.some((e: { path: string }) => e.path === path),
        `${path} not named in ${response.body}`,
      )
    }
    const surrogate = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/outcomes',
      headers: { 'content-type': 'application/json' },
      payload: '{"subagent_id":"a","run_id":"b","evidence":[{"kind":"log","content":"\\ud800"}]}',
    })
    assert.equal(surrogate.statusCode, 400)
    const unknownProbe = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/outcomes',
      payload: {
        subagent_id: 'a',
        run_id: 'b',
        evidence: EVIDENCE,
        probe: { probe_id: crypto.randomUUID() },
      },
    })
    assert.equal(unknownProbe.statusCode, 422)
  })
})

describe('POST /v1/outcomes/:id/evidence', () => {
  it('moves evidence_hash to the union and keeps earlier hashes valid references', async (t) => {
    const app = await buildTestApp(t)
    const orch = await app.key('orchestrator', ['orch-a'])
    const outcome = await createOutcome(app, orch)
    const receipt = { kind: 'side_effect_receipt', name: 'psp', content: { receipt: 'r-991' } }
    const added = await app.request(orch, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/evidence`,
      payload: { evidence: [receipt, EVIDENCE[0]] },
    })
    assert.equal(added.statusCode, 201, added.body)
    const updated = added.json()
    assert.equal(updated.evidence_hash, clientEvidenceHash([...EVIDENCE, receipt]))
    assert.deepEqual(
      updated.evidence_versions.map((v: { evidence_hash: string }) => v.evidence_hash),
      [outcome.evidence_hash, updated.evidence_hash],
    )
    const unchanged = await app.request(orch, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/evidence`,
      payload: { evidence: [receipt] },
    })
    assert.equal(unchanged.statusCode, 201)
    assert.equal(unchanged.json().evidence_hash, updated.evidence_hash, 'nothing new: the hash stays')
    assert.equal(unchanged.json().evidence_versions.length, 2)
    // An interpretation may still name the first version.
    const interpretation = await interpret(app, orch, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
      evidence_hash: outcome.evidence_hash,
    })
    assert.equal(interpretation.evidence_hash, outcome.evidence_hash)
  })
})

describe('POST /v1/outcomes/:id/interpretations', () => {
  it('records revisions, treats an identical resubmission as a no-op, and checks references', async (t) => {
    const app = await buildTestApp(t)
    const orch = await app.key('orchestrator', ['orch-a'])
    const outcome = await createOutcome(app, orch)
    const body = {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'failure' as const,
      intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
      rationale: 'receipt missing from ledger',
    }
    const first = await interpret(app, orch, outcome.outcome_id, body)
    assert.equal(first.revision, 1)
    assert.equal(first.success_criterion_signature, clientHash(CRITERION))
    assert.equal(first.evidence_hash, outcome.evidence_hash, 'defaults to the current evidence')
    assert.deepEqual(Object.keys(first).sort(), [
      'evidence_hash',
      'intended_action',
      'interpretation_id',
      'orchestrator_id',
      'outcome_interpretation',
      'received_at',
      'revision',
      'success_criterion_signature',
    ])
    const same = await interpret(app, orch, outcome.outcome_id, body, 200)
    assert.equal(same.interpretation_id, first.interpretation_id)
    const second = await interpret(app, orch, outcome.outcome_id, {
      ...body,
      outcome_interpretation: 'partial',
    })
    assert.equal(second.revision, 2)

    const byHash = await interpret(app, orch, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
      success_criterion: undefined,
      success_criterion_hash: `sha256:${'a'.repeat(64)}`,
    })
    assert.equal(byHash.success_criterion_signature, `sha256:${'a'.repeat(64)}`)

    await interpret(
      app,
      orch,
      outcome.outcome_id,
      {
        orchestrator_id: 'orch-a',
        outcome_interpretation: 'success',
        evidence_hash: `sha256:${'0'.repeat(64)}`,
      },
      422,
    )
    await interpret(
      app,
      orch,
      outcome.outcome_id,
      { orchestrator_id: 'orch-b', outcome_interpretation: 'success' },
      403,
    )
    const dashboard = await app.key('dashboard')
    await interpret(
      app,
      dashboard,
      outcome.outcome_id,
      { orchestrator_id: 'orch-a', outcome_interpretation: 'success' },
      403,
    )
    await interpret(app, app.adminKey, outcome.outcome_id, {
      orchestrator_id: 'orch-z',
      outcome_interpretation: 'success',
    })
    await interpret(
      app,
      orch,
      crypto.randomUUID(),
      { orchestrator_id: 'orch-a', outcome_interpretation: 'success' },
      404,
    )

    const fetched = (
      await app.request(orch, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })
    ).json()
    assert.deepEqual(
      fetched.interpretations.map((i: { orchestrator_id: string; revision: number }) => [
        i.orchestrator_id,
        i.revision,
      ]),
      [
        ['orch-a', 3],
        ['orch-z', 1],
      ],
    )
  })
})

describe('GET /v1/outcomes', () => {
  it('filters by subagent and status and pages with opaque cursors', async (t) => {
    const app = await buildTestApp(t)
    for (let i = 0; i < 5; i++)
      await createOutcome(app, app.adminKey, { subagent_id: i < 3 ? 'alpha' : 'beta' })
    const page1 = (
      await app.request(app.adminKey, { method: 'GET', url: '/v1/outcomes?subagent_id=alpha&limit=2' })
    ).json()
    assert.equal(page1.items.length, 2)
    assert.equal(typeof page1.next_cursor, 'string')
    const page2 = (
      await app.request(app.adminKey, {
        method: 'GET',
        url: `/v1/outcomes?subagent_id=alpha&limit=2&cursor=${page1.next_cursor}`,
      })
    ).json()
    assert.equal(page2.items.length, 1)
    assert.equal(page2.next_cursor, null)
    const open = (
      await app.request(app.adminKey, { method: 'GET', url: '/v1/outcomes?status=open&limit=600' })
    ).json()
    assert.equal(open.items.length, 5)
    const bad = await app.request(app.adminKey, { method: 'GET', url: '/v1/outcomes?cursor=bm9wZQ' })
    assert.equal(bad.statusCode, 400)
  })
})
