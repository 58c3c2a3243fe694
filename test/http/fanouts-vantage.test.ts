import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { compactVerify, createLocalJWKSet } from 'jose'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import {
  createFanout,
  FLOOR,
  reconcileFanout,
  SIXTY_K,
  ST3_RESULT,
  ST5_RESULT,
  submitResult,
  vantageBody,
} from '../helpers/fanout-fixtures.ts'
import { clientHash } from '../helpers/fixtures.ts'

/**
 * The seed's own example, end to end over HTTP: two workers that never saw each other report Vantage's enterprise
 * floor — the same $60k, six weeks apart, and only the CRM note says "new logos only". A synthesis step would pick
 * one and lose the carve-out; Arbiter contests the fact and says exactly why, or (under `keep_all`) keeps both
 * populations. docs/fanouts.md and the README show these same manifests.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

let app: TestApp
let scout: string
before(async () => {
  app = await buildTestApp(suite)
  scout = await app.key('orchestrator', ['scout'])
})

async function verifySignature(envelope: { manifest: unknown; manifest_digest: string; jws: string }) {
  const jwks = (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
  const { payload } = await compactVerify(envelope.jws, createLocalJWKSet(jwks), {
    algorithms: ['Ed25519', 'EdDSA'],
  })
  assert.deepEqual(JSON.parse(new TextDecoder().decode(payload)), envelope.manifest)
  assert.equal(envelope.manifest_digest, clientHash(envelope.manifest))
}

async function vantage(policy?: Record<string, unknown>) {
  const fanout = await createFanout(app, scout, vantageBody(policy ? { policy } : {}))
  await submitResult(app, scout, fanout.fanout_id, ST3_RESULT)
  await submitResult(app, scout, fanout.fanout_id, ST5_RESULT)
  return { fanout, envelope: await reconcileFanout(app, scout, fanout.fanout_id) }
}

const CRM_POSITION = {
  value: SIXTY_K,
  effective_date: '2025-01-22',
  qualifiers: { applies_to: 'new_logos' },
}
const PAGE_POSITION = { value: SIXTY_K, effective_date: '2025-03-01', qualifiers: {} }

describe('the Vantage example over HTTP', () => {
  it('contests the floor under the default policy, naming the six-week date difference and the carve-out at /applies_to', async () => {
    const { fanout, envelope } = await vantage()
    await verifySignature(envelope)
    const m = envelope.manifest
    assert.equal(m.kind, 'reconciliation')
    assert.equal(m.verdict, 'CONTESTED')
    assert.equal(m.directive, 'HALT')
    assert.equal(m.fanout_id, fanout.fanout_id)
    assert.equal(m.orchestrator_id, 'scout')
    assert.equal(m.supersedes, null)
    assert.equal(m.resolution, null)
    assert.deepEqual(m.reasons, [{ code: 'contested_fact', subject: FLOOR }])
    assert.deepEqual(
      Object.keys(m).sort(),
      [
        'coverage',
        'directive',
        'facts',
        'fanout_id',
        'fanout_key',
        'issued_at',
        'kind',
        'manifest_id',
        'orchestrator_id',
        'policy',
        'policy_digest',
        'reasons',
        'resolution',
        'supersedes',
        'verdict',
      ],
      'a reconciliation manifest carries exactly its fields',
    )
    assert.equal(m.facts.length, 1)
    const floor = m.facts[0]
    assert.equal(floor.fact, FLOOR)
    assert.equal(floor.status, 'contested')
    assert.equal(floor.reason, 'qualifier_difference')
    assert.equal(floor.answer, null)
    assert.equal(floor.rule, null)
    assert.deepEqual(floor.variants, [])
    // Positions sort by their canonical JSON: the CRM note's date sorts first.
    assert.deepEqual(floor.positions, [
      { position_id: 'p1', ...CRM_POSITION, claims: ['st_5#0'], independent_sources: 1, lost_by: null },
      { position_id: 'p2', ...PAGE_POSITION, claims: ['st_3#0'], independent_sources: 1, lost_by: null },
    ])
    assert.deepEqual(floor.conflicts, [
      {
        a: 'p1',
        b: 'p2',
        differs: ['effective_date', 'qualifiers'],
        qualifier_differences: [{ pointer: '/applies_to', a: 'new_logos' }],
      },
    ])
    assert.deepEqual(floor.echoes, [])
    assert.deepEqual(
      floor.claims.map((c: { claim_ref: string; position_id: string; out_of_scope: boolean }) => [
        c.claim_ref,
        c.position_id,
        c.out_of_scope,
      ]),
      [
        ['st_3#0', 'p2', false],
        ['st_5#0', 'p1', false],
      ],
    )
    assert.deepEqual(floor.claims[1].sources, ST5_RESULT.claims[0]!.sources, 'sources are kept as submitted')
    assert.equal(floor.claims[1].confidence, 0.66)
    assert.deepEqual(m.coverage.overlaps, [{ fact: FLOOR, subtasks: ['st_3', 'st_5'] }])
    assert.deepEqual(m.coverage.missing_subtasks, [])
    assert.deepEqual(
      m.coverage.subtasks.map((s: { subtask_id: string; status: string; revision: number }) => [
        s.subtask_id,
        s.status,
        s.revision,
      ]),
      [
        ['st_3', 'DONE', 1],
        ['st_5', 'DONE', 1],
      ],
    )
    assert.equal(m.coverage.subtasks[1].result_digest, clientHash(ST5_RESULT))

    const after = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.equal(after.status, 'halted')
    assert.equal(after.manifest_id, m.manifest_id)

    const ops = await app.key('ops')
    const escalations = (
      await app.request(ops, { method: 'GET', url: '/v1/escalations?case=fanout&status=open' })
    ).json().items
    const escalation = escalations.find((e: { fanout_id: string }) => e.fanout_id === fanout.fanout_id)
    assert.deepEqual(escalation, {
      case: 'fanout',
      outcome_id: null,
      fanout_id: fanout.fanout_id,
      subagent_id: null,
      run_id: null,
      status: 'open',
      manifest_id: m.manifest_id,
      verdict: 'CONTESTED',
      interpretation_divergence_receipt: null,
      opened_at: escalation.opened_at,
      resolved_at: null,
    })
  })

  it('applies no source rule to a qualifier difference, even when the policy names one that would choose', async () => {
    const { envelope } = await vantage({
      resolve: ['source_priority', 'corroboration'],
      source_priority: ['https://vantage.com/', 'crm://'],
    })
    const floor = envelope.manifest.facts[0]
    assert.equal(floor.status, 'contested')
    assert.equal(floor.reason, 'qualifier_difference')
    assert.deepEqual(
      floor.positions.map((p: { lost_by: unknown }) => p.lost_by),
      [null, null],
    )
  })

  it('keeps both populations as variants under on_qualifier_difference keep_all', async () => {
    const { fanout, envelope } = await vantage({ on_qualifier_difference: 'keep_all' })
    await verifySignature(envelope)
    const m = envelope.manifest
    assert.equal(m.verdict, 'RECONCILED')
    assert.equal(m.directive, 'PROCEED')
    assert.deepEqual(m.reasons, [])
    const floor = m.facts[0]
    assert.equal(floor.status, 'scoped')
    assert.equal(floor.answer, null)
    assert.equal(floor.rule, null)
    assert.equal(floor.reason, null)
    assert.deepEqual(floor.variants, [
      {
        qualifiers: { applies_to: 'new_logos' },
        status: 'agreed',
        answer: CRM_POSITION,
        rule: null,
        reason: null,
      },
      { qualifiers: {}, status: 'agreed', answer: PAGE_POSITION, rule: null, reason: null },
    ])
    assert.equal(floor.conflicts.length, 1, 'the conflict is still listed')
    const view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.equal(view.status, 'decided')
    const ops = await app.key('ops')
    const open = (await app.request(ops, { method: 'GET', url: '/v1/escalations?case=fanout' })).json().items
    assert.ok(
      !open.some((e: { fanout_id: string }) => e.fanout_id === fanout.fanout_id),
      'a PROCEED opens no escalation',
    )
  })

  it('lists the manifest under kind=reconciliation and the fan-out id, in one feed with every kind', async () => {
    const { fanout, envelope } = await vantage()
    const listed = await app.request(scout, {
      method: 'GET',
      url: `/v1/manifests?kind=reconciliation&fanout_id=${fanout.fanout_id}`,
    })
    assert.equal(listed.statusCode, 200, listed.body)
    const items = listed.json().items
    assert.equal(items.length, 1)
    assert.deepEqual(items[0].manifest, envelope.manifest)
    const byVerdict = (
      await app.request(scout, { method: 'GET', url: '/v1/manifests?verdict=CONTESTED&limit=500' })
    ).json().items
    assert.ok(
      byVerdict.some(
        (e: { manifest: { manifest_id: string } }) =>
          e.manifest.manifest_id === envelope.manifest.manifest_id,
      ),
    )
    const outcomes = (
      await app.request(scout, {
        method: 'GET',
        url: `/v1/manifests?kind=outcome&fanout_id=${fanout.fanout_id}`,
      })
    ).json().items
    assert.deepEqual(outcomes, [])
    const single = await app.request(scout, {
      method: 'GET',
      url: `/v1/manifests/${envelope.manifest.manifest_id}`,
    })
    // The same signed bytes, now with the log position the sequencer gave it.
    assert.equal(single.body, JSON.stringify({ ...envelope, audit_seq: single.json().audit_seq }))
    assert.ok(Number.isInteger(single.json().audit_seq))
  })
})
