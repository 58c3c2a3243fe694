import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { fanoutStateUpdateIf, fanoutWithVersion } from '../../src/cases/fanout/repository.ts'
import { queryOne } from '../../src/db/statement.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { databaseSnapshotter } from '../helpers/db-snapshot.ts'
import {
  blocked,
  createFanout,
  doneWith,
  FLOOR,
  haltedFanout,
  needsContext,
  PARTNER_DISCOUNT,
  reconcileFanout,
  ST3_RESULT,
  ST5_RESULT,
  submitResult,
  vantageBody,
} from '../helpers/fanout-fixtures.ts'
import { clientHash, signedPart } from '../helpers/fixtures.ts'

/**
 * Fan-outs over HTTP, route by route: creation and its decomposition check, results in the status report
 * (revisions, late, refused), reconciliation (pending, closed, deadline passed, REEVALUATE and what supersedes it,
 * BLOCKED, out-of-scope claims), resolution, and each fan-out's audit story. How a fact is reconciled is the pure
 * module's, tested in test/domain/fanout/; here, what the service adds around it.
 */

const cleanups: Array<() => unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})
const suite = { after: (fn: () => unknown) => void cleanups.push(fn) } as Parameters<typeof buildTestApp>[0]

let app: TestApp
let scout: string
let other: string
let ops: string
let dashboard: string
before(async () => {
  app = await buildTestApp(suite)
  scout = await app.key('orchestrator', ['scout'])
  other = await app.key('orchestrator', ['rival'])
  ops = await app.key('ops')
  dashboard = await app.key('dashboard')
})

const PAST = '2001-01-01T00:00:00Z'
const FUTURE = '2999-01-01T00:00:00Z'

function problem(response: LightMyRequestResponse, status: number) {
  assert.equal(response.statusCode, status, response.body)
  assert.match(String(response.headers['content-type']), /^application\/problem\+json/)
  return response.json()
}

/** Sends `options` and asserts it is refused with `status` and changes nothing in the database. */
async function refusedWithoutChange(key: string, options: InjectOptions, status: number) {
  const snapshot = await databaseSnapshotter(app.app.db)
  const before = await snapshot()
  const body = problem(await app.request(key, options), status)
  assert.deepEqual(await snapshot(), before, 'nothing was stored')
  return body
}

async function records(fanoutId: string) {
  const response = await app.request(ops, {
    method: 'GET',
    url: `/v1/audit/records?fanout_id=${fanoutId}&limit=500`,
  })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().items as {
    kind: string
    manifest_id: string | null
    subagent_id: string | null
    orchestrator_id: string | null
    data: Record<string, unknown>
  }[]
}

describe('POST /v1/fanouts', () => {
  it('creates the fan-out with the policy defaults filled in and the decomposition checked', async () => {
    const body = vantageBody({ facts: [FLOOR, PARTNER_DISCOUNT], deadline: FUTURE })
    const fanout = await createFanout(app, scout, body)
    const policy = {
      resolve: [],
      source_priority: [],
      min_independent_sources: 1,
      on_qualifier_difference: 'halt',
      on_incomplete: 'halt',
      decomposition: 'warn',
    }
    assert.deepEqual(fanout, {
      fanout_id: fanout.fanout_id,
      orchestrator_id: 'scout',
      fanout_key: body.fanout_key,
      question: body.question,
      facts: [FLOOR, PARTNER_DISCOUNT],
      subtasks: body.subtasks,
      deadline: '2999-01-01T00:00:00.000Z',
      policy,
      policy_digest: clientHash(policy),
      decomposition: {
        uncovered_facts: [PARTNER_DISCOUNT],
        overlaps: [{ fact: FLOOR, subtasks: ['st_3', 'st_5'] }],
      },
      status: 'open',
      results: [],
      manifest_id: null,
      created_at: fanout.created_at,
    })
    const read = await app.request(dashboard, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })
    assert.deepEqual(read.json(), fanout)
    const [created] = await records(fanout.fanout_id)
    assert.equal(created!.kind, 'fanout.created')
    assert.equal(created!.data.fanout_id, fanout.fanout_id)
  })

  it('answers the same body again (defaults spelled out or not) with 200 and a different one with 409', async () => {
    const body = vantageBody()
    const fanout = await createFanout(app, scout, body)
    assert.deepEqual(await createFanout(app, scout, body, 200), fanout)
    const spelled = { ...body, deadline: null, policy: { resolve: [], decomposition: 'warn' } }
    assert.deepEqual(await createFanout(app, scout, spelled, 200), fanout)
    const conflict = problem(
      await app.request(scout, {
        method: 'POST',
        url: '/v1/fanouts',
        payload: { ...body, question: 'Another?' },
      }),
      409,
    )
    assert.equal(conflict.fanout_id, fanout.fanout_id)
    assert.equal((await records(fanout.fanout_id)).length, 1, 'one fanout.created')
  })

  it('refuses a strict decomposition with one error per unowned fact and per owner of an overlapping fact', async () => {
    const body = vantageBody({ facts: [FLOOR, PARTNER_DISCOUNT], policy: { decomposition: 'strict' } })
    const refused = await refusedWithoutChange(
      scout,
      { method: 'POST', url: '/v1/fanouts', payload: body },
      422,
    )
    assert.deepEqual(
      refused.errors.map((e: { path: string }) => e.path),
      ['body/facts/1', 'body/subtasks/0/facts/0', 'body/subtasks/1/facts/0'],
    )
    const clean = vantageBody({
      policy: { decomposition: 'strict' },
      subtasks: [
        { subtask_id: 'st_3', facts: [FLOOR] },
        { subtask_id: 'st_5', facts: [] },
      ],
    })
    const fanout = await createFanout(app, scout, clean)
    assert.deepEqual(fanout.decomposition, { uncovered_facts: [], overlaps: [] })
    assert.deepEqual(fanout.subtasks[0], { subtask_id: 'st_3', scope: null, facts: [FLOOR] })
  })

  it('lets an orchestrator key create only under its own orchestrator ids, after the schema is checked', async () => {
    const body = vantageBody({ orchestrator_id: 'rival' })
    await refusedWithoutChange(scout, { method: 'POST', url: '/v1/fanouts', payload: body }, 403)
    const invalid = await refusedWithoutChange(
      scout,
      { method: 'POST', url: '/v1/fanouts', payload: { ...body, facts: [] } },
      400,
    )
    assert.deepEqual(invalid.errors[0], { path: 'body/facts', message: 'at least one fact' })
    await createFanout(app, app.adminKey, vantageBody({ orchestrator_id: 'anyone' }))
  })
})

describe('GET /v1/fanouts', () => {
  it('lists oldest first, filtered by orchestrator and status, in pages', async () => {
    const key = await app.key('orchestrator', ['lister'])
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      ids.push((await createFanout(app, key, vantageBody({ orchestrator_id: 'lister' }))).fanout_id)
    }
    await submitResult(app, key, ids[2]!, ST3_RESULT)
    await submitResult(app, key, ids[2]!, ST5_RESULT)
    await reconcileFanout(app, key, ids[2]!)
    const page1 = (
      await app.request(dashboard, { method: 'GET', url: '/v1/fanouts?orchestrator_id=lister&limit=2' })
    ).json()
    assert.deepEqual(
      page1.items.map((f: { fanout_id: string }) => f.fanout_id),
      ids.slice(0, 2),
    )
    const page2 = (
      await app.request(dashboard, {
        method: 'GET',
        url: `/v1/fanouts?orchestrator_id=lister&limit=2&cursor=${page1.next_cursor}`,
      })
    ).json()
    assert.deepEqual(
      page2.items.map((f: { fanout_id: string }) => f.fanout_id),
      [ids[2]],
    )
    assert.equal(page2.next_cursor, null)
    assert.deepEqual(
      page2.items[0].results.map((r: { subtask_id: string }) => r.subtask_id),
      ['st_3', 'st_5'],
    )
    const halted = (
      await app.request(dashboard, { method: 'GET', url: '/v1/fanouts?orchestrator_id=lister&status=halted' })
    ).json()
    assert.deepEqual(
      halted.items.map((f: { fanout_id: string }) => f.fanout_id),
      [ids[2]],
    )
    problem(await app.request(dashboard, { method: 'GET', url: '/v1/fanouts?status=closed' }), 400)
  })
})

describe('POST /v1/fanouts/:id/results', () => {
  it('answers a result with its digest, the same body again with 200, and a different one as the next revision', async () => {
    const fanout = await createFanout(app, scout, vantageBody())
    const first = await submitResult(app, scout, fanout.fanout_id, ST5_RESULT)
    assert.deepEqual(first, {
      fanout_id: fanout.fanout_id,
      subtask_id: 'st_5',
      revision: 1,
      status: 'DONE',
      late: false,
      result_digest: clientHash(ST5_RESULT),
      received_at: first.received_at,
    })
    // JCS-equal: the same members in another order are the same body.
    const reordered = Object.fromEntries(Object.entries(ST5_RESULT).reverse())
    assert.deepEqual(await submitResult(app, scout, fanout.fanout_id, reordered, 200), first)
    const revised = { ...ST5_RESULT, summary: 'CRM notes, second pass.' }
    const second = await submitResult(app, scout, fanout.fanout_id, revised)
    assert.equal(second.revision, 2)
    assert.equal(second.result_digest, clientHash(revised))
    // Going back to the first body is a change too: only the latest revision is "the same body".
    assert.equal((await submitResult(app, scout, fanout.fanout_id, ST5_RESULT)).revision, 3)
    const view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.deepEqual(
      view.results.map((r: { subtask_id: string; revision: number }) => [r.subtask_id, r.revision]),
      [['st_5', 3]],
    )
    const recorded = (await records(fanout.fanout_id)).filter((r) => r.kind === 'result.recorded')
    assert.deepEqual(
      recorded.map((r) => r.data.revision),
      [1, 2, 3],
    )
  })

  const invalid: [string, Record<string, unknown>, string, RegExp][] = [
    [
      'DONE without evidence',
      { status: 'DONE', evidence: undefined },
      'body/evidence',
      /required when status is DONE/,
    ],
    ['DONE with an empty evidence list', { evidence: [] }, 'body/evidence', /at least one/],
    [
      'DONE_WITH_CONCERNS without concerns',
      { status: 'DONE_WITH_CONCERNS' },
      'body/concerns',
      /required when status is DONE_WITH_CONCERNS/,
    ],
    [
      'NEEDS_CONTEXT without blocking_question',
      { status: 'NEEDS_CONTEXT', evidence: undefined, claims: undefined },
      'body/blocking_question',
      /required when status is NEEDS_CONTEXT/,
    ],
    [
      'BLOCKED without blocking_reason',
      { status: 'BLOCKED', evidence: undefined, claims: undefined },
      'body/blocking_reason',
      /required when status is BLOCKED/,
    ],
    [
      'claims on NEEDS_CONTEXT, even empty',
      { status: 'NEEDS_CONTEXT', evidence: undefined, claims: [], blocking_question: 'which?' },
      'body/claims',
      /only when status is DONE or DONE_WITH_CONCERNS/,
    ],
    [
      'evidence on BLOCKED, even null',
      { status: 'BLOCKED', evidence: null, claims: undefined, blocking_reason: 'down' },
      'body/evidence',
      /only when status is DONE or DONE_WITH_CONCERNS/,
    ],
    [
      'blocking_reason on DONE',
      { blocking_reason: 'x' },
      'body/blocking_reason',
      /only when status is BLOCKED/,
    ],
    ['an unknown key', { verdict: 'ok' }, 'body/verdict', /unknown field/],
    ['an unknown status', { status: 'FINISHED' }, 'body/status', /must be one of/],
    ['an empty summary', { summary: '   ' }, 'body/summary', /must not be empty/],
    [
      'a claim without sources',
      { claims: [{ fact: FLOOR, value: 1, sources: [] }] },
      'body/claims/0/sources',
      /at least one source/,
    ],
    [
      'a null value',
      { claims: [{ fact: FLOOR, value: null, sources: [{ uri: 'x' }] }] },
      'body/claims/0/value',
      /must not be null/,
    ],
    [
      'a date that does not exist',
      { claims: [{ fact: FLOOR, value: 1, effective_date: '2025-02-29', sources: [{ uri: 'x' }] }] },
      'body/claims/0/effective_date',
      /calendar/,
    ],
    [
      'a confidence above 1',
      { claims: [{ fact: FLOOR, value: 1, confidence: 1.5, sources: [{ uri: 'x' }] }] },
      'body/claims/0/confidence',
      /between 0 and 1/,
    ],
    [
      'an upper-case content digest',
      {
        claims: [
          { fact: FLOOR, value: 1, sources: [{ uri: 'x', content_digest: `sha256:${'A'.repeat(64)}` }] },
        ],
      },
      'body/claims/0/sources/0/content_digest',
      /sha256/,
    ],
    [
      'a URI of 2,001 characters',
      { claims: [{ fact: FLOOR, value: 1, sources: [{ uri: 'u'.repeat(2001) }] }] },
      'body/claims/0/sources/0/uri',
      /at most 2000/,
    ],
    [
      'a qualifier that is an object',
      { claims: [{ fact: FLOOR, value: 1, qualifiers: { applies_to: { x: 1 } }, sources: [{ uri: 'x' }] }] },
      'body/claims/0/qualifiers/applies_to',
      /string, number or boolean/,
    ],
  ]
  for (const [label, change, path, message] of invalid) {
    it(`refuses ${label} with 400 pointing at ${path}, storing nothing`, async () => {
      const fanout = await createFanout(app, scout, vantageBody())
      const body = JSON.parse(JSON.stringify({ ...ST5_RESULT, ...change }))
      const refused = await refusedWithoutChange(
        scout,
        { method: 'POST', url: `/v1/fanouts/${fanout.fanout_id}/results`, payload: body },
        400,
      )
      const error = refused.errors.find((e: { path: string }) => e.path === path)
      assert.ok(error, `an error at ${path}: ${JSON.stringify(refused.errors)}`)
      assert.match(error.message, message)
    })
  }

  it('refuses an unknown subtask and a claim about a fact outside the fan-out with 422, storing nothing', async () => {
    const fanout = await createFanout(app, scout, vantageBody())
    const url = `/v1/fanouts/${fanout.fanout_id}/results`
    const unknown = await refusedWithoutChange(
      scout,
      { method: 'POST', url, payload: { ...ST5_RESULT, subtask_id: 'st_9' } },
      422,
    )
    assert.deepEqual(unknown.errors, [{ path: 'body/subtask_id', message: 'not a subtask of this fan-out' }])
    const outside = doneWith('st_5', [
      { fact: FLOOR, value: 1 },
      { fact: 'vantage.smb.floor', value: 2 },
    ])
    const refused = await refusedWithoutChange(scout, { method: 'POST', url, payload: outside }, 422)
    assert.deepEqual(
      refused.errors.map((e: { path: string }) => e.path),
      ['body/claims/1/fact'],
    )
  })

  it('checks 404, then the schema, then ownership, then references', async () => {
    const fanout = await createFanout(app, scout, vantageBody())
    const url = `/v1/fanouts/${fanout.fanout_id}/results`
    const missing = '00000000-0000-4000-8000-000000000000'
    problem(
      await app.request(scout, {
        method: 'POST',
        url: `/v1/fanouts/${missing}/results`,
        payload: { bad: 1 },
      }),
      404,
    )
    problem(
      await app.request(dashboard, { method: 'POST', url: `/v1/fanouts/${missing}/results`, payload: {} }),
      403,
    )
    problem(await app.request(other, { method: 'POST', url, payload: { bad: 1 } }), 400)
    problem(
      await app.request(other, { method: 'POST', url, payload: { ...ST5_RESULT, subtask_id: 'st_9' } }),
      403,
    )
    problem(await app.request(other, { method: 'POST', url, payload: ST5_RESULT }), 403)
    problem(
      await app.request(scout, { method: 'POST', url, payload: { ...ST5_RESULT, subtask_id: 'st_9' } }),
      422,
    )
    await submitResult(app, app.adminKey, fanout.fanout_id, ST5_RESULT)
  })

  it('marks a result received after the deadline late, and the manifest lists it', async () => {
    const fanout = await createFanout(app, scout, vantageBody({ deadline: PAST }))
    assert.equal((await submitResult(app, scout, fanout.fanout_id, ST3_RESULT)).late, true)
    assert.equal((await submitResult(app, scout, fanout.fanout_id, ST5_RESULT)).late, true)
    const { manifest } = await reconcileFanout(app, scout, fanout.fanout_id)
    assert.deepEqual(manifest.coverage.late_subtasks, ['st_3', 'st_5'])
    assert.ok(manifest.coverage.subtasks.every((s: { late: boolean }) => s.late))
    const onTime = await createFanout(app, scout, vantageBody({ deadline: FUTURE }))
    assert.equal((await submitResult(app, scout, onTime.fanout_id, ST3_RESULT)).late, false)
    // Each first result's record takes `late` and the orchestrator from the fan-out row, in the same statement.
    for (const [fanoutId, late] of [
      [fanout.fanout_id, true],
      [onTime.fanout_id, false],
    ] as const) {
      const recorded = (await records(fanoutId)).filter((r) => r.kind === 'result.recorded')
      assert.ok(recorded.length > 0)
      for (const record of recorded) {
        assert.equal(record.orchestrator_id, 'scout')
        assert.equal(record.subagent_id, null)
        assert.equal(record.data.late, late)
        assert.equal(record.data.revision, 1)
      }
    }
  })

  it('refuses a different result after the final manifest with 409 naming it, recorded as result.refused; the same body is still 200', async () => {
    const { fanout, manifest } = await haltedFanout(app, scout)
    const url = `/v1/fanouts/${fanout.fanout_id}/results`
    const again = await app.request(scout, { method: 'POST', url, payload: ST5_RESULT })
    assert.equal(again.statusCode, 200, again.body)
    assert.equal(again.json().revision, 1)
    const late = { ...ST5_RESULT, summary: 'Actually, all customers.' }
    const refused = problem(await app.request(scout, { method: 'POST', url, payload: late }), 409)
    assert.equal(refused.manifest_id, manifest.manifest_id)
    const refusal = (await records(fanout.fanout_id)).filter((r) => r.kind === 'result.refused')
    assert.equal(refusal.length, 1)
    assert.equal(refusal[0]!.manifest_id, manifest.manifest_id)
    assert.deepEqual(refusal[0]!.data, {
      fanout_id: fanout.fanout_id,
      subtask_id: 'st_5',
      status: 'DONE',
      result_digest: clientHash(late),
      fanout_status: 'halted',
    })
    const view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.equal(view.results.find((r: { subtask_id: string }) => r.subtask_id === 'st_5').revision, 1)
    const reconciled = await reconcileFanout(app, scout, fanout.fanout_id)
    assert.equal(reconciled.manifest.manifest_id, manifest.manifest_id, 'the manifest stands')
  })

  it('refuses results after a PROCEED and after a resolution alike', async () => {
    const decided = await createFanout(
      app,
      scout,
      vantageBody({ policy: { on_qualifier_difference: 'keep_all' } }),
    )
    await submitResult(app, scout, decided.fanout_id, ST3_RESULT)
    await submitResult(app, scout, decided.fanout_id, ST5_RESULT)
    const proceed = await reconcileFanout(app, scout, decided.fanout_id)
    const after = problem(
      await app.request(scout, {
        method: 'POST',
        url: `/v1/fanouts/${decided.fanout_id}/results`,
        payload: needsContext('st_3'),
      }),
      409,
    )
    assert.equal(after.manifest_id, proceed.manifest.manifest_id)

    const { fanout } = await haltedFanout(app, scout)
    const resolved = await app.request(ops, {
      method: 'POST',
      url: `/v1/fanouts/${fanout.fanout_id}/resolution`,
      payload: { facts: [{ fact: FLOOR, answer: null }], rationale: 'no answer yet' },
    })
    assert.equal(resolved.statusCode, 201, resolved.body)
    const refused = problem(
      await app.request(scout, {
        method: 'POST',
        url: `/v1/fanouts/${fanout.fanout_id}/results`,
        payload: blocked('st_3'),
      }),
      409,
    )
    assert.equal(refused.manifest_id, resolved.json().manifest.manifest_id)
  })
})

describe('POST /v1/fanouts/:id/reconcile', () => {
  it('writes no reconciliation read before a result landed: every result gives the fan-out a new version', async () => {
    const db = app.app.services.db
    const fanout = await createFanout(app, scout, vantageBody())
    const id = fanout.fanout_id
    const version = async () => (await queryOne(db, fanoutWithVersion(id))).row_version
    const versions = [await version()]
    // A first result (one statement), then a revision of it (the transaction): each moves the version.
    await submitResult(app, scout, id, ST3_RESULT)
    versions.push(await version())
    await submitResult(app, scout, id, { ...ST3_RESULT, summary: 'revised' })
    versions.push(await version())
    assert.equal(new Set(versions).size, 3)
    // A decision made from what was read before the revision writes nothing.
    const stale = fanoutStateUpdateIf(id, versions[1]!, {
      status: 'decided',
      manifestId: randomUUID(),
      closedAt: null,
    })
    assert.equal((await db.query(stale.text, stale.values)).rowCount, 0)
    await submitResult(app, scout, id, ST5_RESULT)
    const { manifest } = await reconcileFanout(app, scout, id)
    const view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${id}` })).json()
    assert.equal(view.manifest_id, manifest.manifest_id)
  })

  it('answers 202 with the missing subtasks while some are out and the deadline has not passed', async () => {
    for (const deadline of [undefined, FUTURE]) {
      const fanout = await createFanout(app, scout, vantageBody(deadline ? { deadline } : {}))
      assert.deepEqual(await reconcileFanout(app, scout, fanout.fanout_id, 202), {
        status: 'pending',
        missing_subtasks: ['st_3', 'st_5'],
      })
      await submitResult(app, scout, fanout.fanout_id, ST3_RESULT)
      assert.deepEqual(await reconcileFanout(app, scout, fanout.fanout_id, 202, {}), {
        status: 'pending',
        missing_subtasks: ['st_5'],
      })
      const view = (
        await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })
      ).json()
      assert.equal(view.manifest_id, null, 'nothing is issued while waiting')
    }
  })

  it('decides with the missing subtasks once the deadline has passed: INCOMPLETE + HALT, MISSING in the coverage', async () => {
    const fanout = await createFanout(app, scout, vantageBody({ deadline: PAST }))
    await submitResult(app, scout, fanout.fanout_id, ST3_RESULT)
    const { manifest } = await reconcileFanout(app, scout, fanout.fanout_id)
    assert.equal(manifest.verdict, 'INCOMPLETE')
    assert.equal(manifest.directive, 'HALT')
    assert.deepEqual(manifest.coverage.missing_subtasks, ['st_5'])
    assert.deepEqual(manifest.coverage.subtasks[1], {
      subtask_id: 'st_5',
      status: 'MISSING',
      revision: null,
      received_at: null,
      late: false,
      result_digest: null,
    })
    assert.deepEqual(manifest.reasons, [{ code: 'missing_subtask', subject: 'st_5' }])
    assert.equal(manifest.facts[0].status, 'agreed', 'what did come back is still reconciled')
  })

  it('stops waiting when the owner closes the fan-out, and keeps it closed', async () => {
    const fanout = await createFanout(app, scout, vantageBody({ policy: { on_incomplete: 'proceed' } }))
    await submitResult(app, scout, fanout.fanout_id, needsContext('st_3'))
    await reconcileFanout(app, scout, fanout.fanout_id, 202, { close: false })
    const closed = await reconcileFanout(app, scout, fanout.fanout_id, 200, { close: true })
    assert.equal(closed.manifest.directive, 'REEVALUATE')
    assert.deepEqual(closed.manifest.coverage.missing_subtasks, ['st_5'])
    // The worker returns; a plain reconcile no longer waits for st_5.
    await submitResult(app, scout, fanout.fanout_id, ST3_RESULT)
    const next = await reconcileFanout(app, scout, fanout.fanout_id)
    assert.equal(next.manifest.verdict, 'RECONCILED')
    assert.equal(next.manifest.supersedes, closed.manifest.manifest_id)
    assert.deepEqual(next.manifest.reasons, [{ code: 'missing_subtask', subject: 'st_5' }])
  })

  it('asks for context with a REEVALUATE that stays open, then issues a manifest that supersedes it', async () => {
    const fanout = await createFanout(app, scout, vantageBody())
    await submitResult(app, scout, fanout.fanout_id, ST3_RESULT)
    await submitResult(
      app,
      scout,
      fanout.fanout_id,
      needsContext('st_5', 'Which CRM field is authoritative?'),
    )
    const first = await reconcileFanout(app, scout, fanout.fanout_id)
    assert.equal(first.manifest.verdict, 'INCOMPLETE')
    assert.equal(first.manifest.directive, 'REEVALUATE')
    assert.deepEqual(first.manifest.coverage.needs_context, [
      { subtask_id: 'st_5', blocking_question: 'Which CRM field is authoritative?' },
    ])
    assert.deepEqual(first.manifest.reasons, [{ code: 'needs_context', subject: 'st_5' }])
    let view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.equal(view.status, 'open')
    assert.equal(view.manifest_id, first.manifest.manifest_id)
    const again = await reconcileFanout(app, scout, fanout.fanout_id)
    assert.equal(again.manifest.manifest_id, first.manifest.manifest_id, 'unchanged inputs, same manifest')
    const escalations = (
      await app.request(ops, { method: 'GET', url: '/v1/escalations?case=fanout&limit=500' })
    ).json()
    assert.ok(!escalations.items.some((e: { fanout_id: string }) => e.fanout_id === fanout.fanout_id))

    await submitResult(app, scout, fanout.fanout_id, ST5_RESULT)
    const second = await reconcileFanout(app, scout, fanout.fanout_id)
    assert.equal(second.manifest.verdict, 'CONTESTED')
    assert.equal(second.manifest.supersedes, first.manifest.manifest_id)
    assert.equal(second.manifest.coverage.subtasks[1].revision, 2)
    view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.equal(view.status, 'halted')
    const listed = (
      await app.request(scout, { method: 'GET', url: `/v1/manifests?fanout_id=${fanout.fanout_id}` })
    ).json().items
    assert.deepEqual(
      listed.map((e: { manifest: { directive: string } }) => e.manifest.directive),
      ['REEVALUATE', 'HALT'],
    )
  })

  it('halts on a BLOCKED worker under on_incomplete halt, and reconciles the rest under proceed', async () => {
    const halting = await createFanout(app, scout, vantageBody())
    await submitResult(app, scout, halting.fanout_id, ST3_RESULT)
    await submitResult(app, scout, halting.fanout_id, blocked('st_5', 'the CRM export is down'))
    const halt = (await reconcileFanout(app, scout, halting.fanout_id)).manifest
    assert.equal(halt.verdict, 'INCOMPLETE')
    assert.equal(halt.directive, 'HALT')
    assert.deepEqual(halt.coverage.blocked, [
      { subtask_id: 'st_5', blocking_reason: 'the CRM export is down' },
    ])
    assert.deepEqual(halt.reasons, [{ code: 'blocked', subject: 'st_5' }])

    const proceeding = await createFanout(app, scout, vantageBody({ policy: { on_incomplete: 'proceed' } }))
    await submitResult(app, scout, proceeding.fanout_id, ST3_RESULT)
    await submitResult(app, scout, proceeding.fanout_id, blocked('st_5'))
    const proceed = (await reconcileFanout(app, scout, proceeding.fanout_id)).manifest
    assert.equal(proceed.verdict, 'RECONCILED')
    assert.equal(proceed.directive, 'PROCEED')
    assert.deepEqual(proceed.reasons, [{ code: 'blocked', subject: 'st_5' }], 'the reason is still listed')
  })

  it('keeps a claim about a fact its subtask does not own, marked out_of_scope and counted', async () => {
    const fanout = await createFanout(
      app,
      scout,
      vantageBody({
        facts: [FLOOR, PARTNER_DISCOUNT],
        subtasks: [
          { subtask_id: 'st_3', facts: [FLOOR] },
          { subtask_id: 'st_7', facts: [PARTNER_DISCOUNT] },
        ],
      }),
    )
    await submitResult(app, scout, fanout.fanout_id, doneWith('st_3', [{ fact: FLOOR, value: 60000 }]))
    await submitResult(
      app,
      scout,
      fanout.fanout_id,
      doneWith('st_7', [
        { fact: PARTNER_DISCOUNT, value: 0.2 },
        { fact: FLOOR, value: 60000, uri: 'https://example.com/other' },
      ]),
    )
    const { manifest } = await reconcileFanout(app, scout, fanout.fanout_id)
    const floor = manifest.facts.find((f: { fact: string }) => f.fact === FLOOR)
    assert.equal(floor.status, 'agreed')
    assert.deepEqual(
      floor.claims.map((c: { claim_ref: string; out_of_scope: boolean }) => [c.claim_ref, c.out_of_scope]),
      [
        ['st_3#0', false],
        ['st_7#1', true],
      ],
    )
    assert.equal(floor.positions[0].independent_sources, 2)
    assert.equal(manifest.verdict, 'RECONCILED')
  })

  it('takes no body, {} or {"close": true|false}, and refuses anything else with 400', async () => {
    const fanout = await createFanout(app, scout, vantageBody())
    const url = `/v1/fanouts/${fanout.fanout_id}/reconcile`
    for (const payload of [{ close: 'yes' }, { force: true }, [], 1]) {
      await refusedWithoutChange(scout, { method: 'POST', url, payload: payload as object }, 400)
    }
    problem(await app.request(other, { method: 'POST', url }), 403)
    problem(await app.request(dashboard, { method: 'POST', url }), 403)
    problem(
      await app.request(scout, {
        method: 'POST',
        url: '/v1/fanouts/00000000-0000-4000-8000-000000000000/reconcile',
        payload: { close: 'x' },
      }),
      404,
    )
    await reconcileFanout(app, app.adminKey, fanout.fanout_id, 202)
  })
})

describe('POST /v1/fanouts/:id/resolution', () => {
  it('issues a final HUMAN_RESOLVED manifest that supersedes the HALT; reconcile returns it from then on', async () => {
    const { fanout, manifest: halt } = await haltedFanout(app, scout)
    const answer = {
      value: { amount: 60000, currency: 'USD', per: 'year' },
      effective_date: '2025-01-22',
      qualifiers: { applies_to: 'new_logos' },
    }
    const response = await app.request(ops, {
      method: 'POST',
      url: `/v1/fanouts/${fanout.fanout_id}/resolution`,
      payload: { facts: [{ fact: FLOOR, answer }], rationale: 'Sales confirmed: new logos only.' },
    })
    assert.equal(response.statusCode, 201, response.body)
    const resolved = response.json().manifest
    assert.equal(resolved.verdict, 'HUMAN_RESOLVED')
    assert.equal(resolved.directive, 'PROCEED')
    assert.equal(resolved.supersedes, halt.manifest_id)
    assert.equal(resolved.resolution.rationale, 'Sales confirmed: new logos only.')
    assert.deepEqual(resolved.coverage, halt.coverage)
    assert.deepEqual(resolved.reasons, halt.reasons)
    const floor = resolved.facts[0]
    assert.equal(floor.status, 'resolved')
    assert.equal(floor.rule, 'human')
    assert.equal(floor.reason, null)
    assert.deepEqual(floor.answer, answer)
    assert.deepEqual(floor.positions, halt.facts[0].positions, 'every position is kept')
    assert.equal(
      (await reconcileFanout(app, scout, fanout.fanout_id)).manifest.manifest_id,
      resolved.manifest_id,
    )
    const view = (await app.request(scout, { method: 'GET', url: `/v1/fanouts/${fanout.fanout_id}` })).json()
    assert.equal(view.status, 'resolved')
    assert.equal(view.manifest_id, resolved.manifest_id)
    const escalation = (
      await app.request(ops, { method: 'GET', url: '/v1/escalations?case=fanout&status=resolved&limit=500' })
    )
      .json()
      .items.find((e: { fanout_id: string }) => e.fanout_id === fanout.fanout_id)
    assert.equal(escalation.manifest_id, halt.manifest_id, 'the escalation keeps the HALT')
    assert.equal(escalation.verdict, 'CONTESTED')
    assert.notEqual(escalation.resolved_at, null)
    const again = problem(
      await app.request(ops, {
        method: 'POST',
        url: `/v1/fanouts/${fanout.fanout_id}/resolution`,
        payload: { facts: [{ fact: FLOOR, answer: null }], rationale: 'again' },
      }),
      409,
    )
    assert.equal(again.manifest_id, resolved.manifest_id)
  })

  it('needs an answer for every contested fact and only those (422), and facts: [] for a HALT with none', async () => {
    const { fanout } = await haltedFanout(app, scout)
    const url = `/v1/fanouts/${fanout.fanout_id}/resolution`
    const missing = await refusedWithoutChange(
      ops,
      { method: 'POST', url, payload: { facts: [], rationale: 'r' } },
      422,
    )
    assert.deepEqual(
      missing.errors.map((e: { path: string }) => e.path),
      ['body/facts'],
    )
    const extra = await refusedWithoutChange(
      ops,
      {
        method: 'POST',
        url,
        payload: {
          facts: [
            { fact: FLOOR, answer: null },
            { fact: 'vantage.smb.floor', answer: null },
            { fact: FLOOR, answer: null },
          ],
          rationale: 'r',
        },
      },
      422,
    )
    assert.deepEqual(
      extra.errors.map((e: { path: string }) => e.path),
      ['body/facts/1/fact', 'body/facts/2/fact'],
    )
    await refusedWithoutChange(ops, { method: 'POST', url, payload: { facts: [], rationale: '  ' } }, 400)

    const incomplete = await createFanout(app, scout, vantageBody({ deadline: PAST }))
    await submitResult(app, scout, incomplete.fanout_id, ST3_RESULT)
    assert.equal((await reconcileFanout(app, scout, incomplete.fanout_id)).manifest.verdict, 'INCOMPLETE')
    const resolved = await app.request(ops, {
      method: 'POST',
      url: `/v1/fanouts/${incomplete.fanout_id}/resolution`,
      payload: { facts: [], rationale: 'st_5 will not come back; the page is enough' },
    })
    assert.equal(resolved.statusCode, 201, resolved.body)
    assert.equal(resolved.json().manifest.facts[0].status, 'agreed')
  })

  it('refuses to resolve a fan-out that is not halted (409) and is ops and admin only', async () => {
    const fanout = await createFanout(app, scout, vantageBody())
    const url = `/v1/fanouts/${fanout.fanout_id}/resolution`
    const payload = { facts: [], rationale: 'r' }
    await refusedWithoutChange(ops, { method: 'POST', url, payload }, 409)
    await refusedWithoutChange(scout, { method: 'POST', url, payload }, 403)
    await refusedWithoutChange(
      ops,
      { method: 'POST', url: '/v1/fanouts/00000000-0000-4000-8000-000000000000/resolution', payload: {} },
      404,
    )
  })
})

describe('GET /v1/audit/fanouts/:id', () => {
  it("tells the fan-out's story: every record names it in data.fanout_id, with the current manifest", async () => {
    const { fanout } = await haltedFanout(app, scout)
    const resolved = await app.request(ops, {
      method: 'POST',
      url: `/v1/fanouts/${fanout.fanout_id}/resolution`,
      payload: { facts: [{ fact: FLOOR, answer: null }], rationale: 'left open on purpose' },
    })
    const response = await app.request(ops, { method: 'GET', url: `/v1/audit/fanouts/${fanout.fanout_id}` })
    assert.equal(response.statusCode, 200, response.body)
    const story = response.json()
    assert.equal(story.fanout_id, fanout.fanout_id)
    assert.equal(story.status, 'resolved')
    assert.deepEqual(signedPart(story.manifest), signedPart(resolved.json()))
    assert.deepEqual(
      story.records.map((r: { kind: string }) => r.kind),
      [
        'fanout.created',
        'result.recorded',
        'result.recorded',
        'manifest.issued',
        'escalation.opened',
        'resolution.recorded',
        'manifest.issued',
      ],
    )
    for (const record of story.records) {
      assert.equal(record.data.fanout_id, fanout.fanout_id)
      assert.equal(record.outcome_id, null)
      assert.equal(record.subagent_id, null)
      assert.equal(record.orchestrator_id, 'scout')
    }
    const issued = story.records.filter((r: { kind: string }) => r.kind === 'manifest.issued')
    assert.deepEqual(
      issued.map((r: { verdict: string; data: { kind: string; directive: string } }) => [
        r.verdict,
        r.data.kind,
        r.data.directive,
      ]),
      [
        ['CONTESTED', 'reconciliation', 'HALT'],
        ['HUMAN_RESOLVED', 'reconciliation', 'PROCEED'],
      ],
    )
    problem(await app.request(scout, { method: 'GET', url: `/v1/audit/fanouts/${fanout.fanout_id}` }), 403)
    problem(
      await app.request(ops, {
        method: 'GET',
        url: '/v1/audit/fanouts/00000000-0000-4000-8000-000000000000',
      }),
      404,
    )
    const open = await createFanout(app, scout, vantageBody())
    const empty = (
      await app.request(ops, { method: 'GET', url: `/v1/audit/fanouts/${open.fanout_id}` })
    ).json()
    assert.equal(empty.manifest, null)
    assert.equal(empty.status, 'open')
  })
})
