import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { verifyEnvelope } from '../../src/crypto/jws.ts'
import type { Queryable } from '../../src/db/pool.ts'
import { LIMITS } from '../../src/domain/limits.ts'
import type { CaseKind, Decided } from '../../src/engine/case-kind.ts'
import { pageEscalations } from '../../src/engine/escalations.ts'
import { evaluateCase } from '../../src/engine/evaluate-case.ts'
import { envelopeText, parseManifest, type StoredEnvelope } from '../../src/engine/manifests.ts'
import { resolveCase } from '../../src/engine/resolve-case.ts'
import { AppError } from '../../src/errors.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/*
 * A fourth, made-up case kind — a tally of votes — plugged into the engine through its public interface only,
 * with a table of its own created here. If the engine were still welded to outcomes, this kind could not lock,
 * decide, move, sign, escalate or be resolved.
 *
 * The tally's rules: fewer than two votes → pending; all votes equal → UNANIMOUS (final); two differing votes →
 * SPLIT (not final: wait for a third); three or more, still differing → DEADLOCK, HALT and escalate.
 */

type TallyStatus = 'open' | 'decided' | 'halted' | 'resolved'

interface TallyRow {
  id: string
  votes: string[]
  status: TallyStatus
  manifest_id: string | null
}

interface TallyContent {
  tally_id: string
  verdict: 'UNANIMOUS' | 'SPLIT' | 'DEADLOCK' | 'HUMAN_RESOLVED'
  directive: 'PROCEED' | 'REEVALUATE' | 'HALT'
  votes: string[]
  winner: string | null
}

/** The tally's pure transition function. */
function nextStatus(status: TallyStatus, directive: TallyContent['directive'] | 'RESOLVE'): TallyStatus {
  if (directive === 'RESOLVE') {
    if (status !== 'halted') throw new AppError('CONFLICT', `a ${status} tally cannot be resolved`)
    return 'resolved'
  }
  if (status !== 'open') throw new Error(`a ${status} tally takes no decision`)
  return directive === 'PROCEED' ? 'decided' : directive === 'HALT' ? 'halted' : 'open'
}

async function readTally(db: Queryable, id: string, lock: boolean) {
  const { rows } = await db.query<TallyRow>(
    `SELECT id, votes, status, manifest_id FROM tallies WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
    [id],
  )
  return rows[0]
}

async function writeTally(db: Queryable, id: string, status: TallyStatus, manifestId: string) {
  await db.query('UPDATE tallies SET status = $2, manifest_id = $3 WHERE id = $1', [id, status, manifestId])
}

const tallyCase: CaseKind<TallyRow, string[], TallyContent, { votes_needed: number }, { winner: string }> = {
  name: 'tally',
  manifestKind: 'tally',
  noun: 'tally',
  lock: (tx, id) => readTally(tx, id, true),
  find: (db, id) => readTally(db, id, false),
  caseId: (row) => row.id,
  status: (row) => row.status,
  manifestId: (row) => row.manifest_id,
  round: () => 0,
  auditSubject: (row) => ({ data: { tally_id: row.id } }),
  auditQuery: () => ({}),
  loadInput: async (_tx, row) => row.votes,
  inputsDigest: (_row, votes) => votes.join(','),
  decide(row, votes) {
    if (votes.length < 2) return { kind: 'pending', pending: { votes_needed: 2 - votes.length } }
    const unanimous = new Set(votes).size === 1
    const content = (verdict: TallyContent['verdict'], directive: TallyContent['directive']) => ({
      tally_id: row.id,
      verdict,
      directive,
      votes,
      winner: unanimous ? votes[0]! : null,
    })
    if (unanimous) return decided(content('UNANIMOUS', 'PROCEED'), true, null)
    if (votes.length === 2) return decided(content('SPLIT', 'REEVALUATE'), false, null)
    return decided(content('DEADLOCK', 'HALT'), true, { data: { votes } })
  },
  recordDecision: (row, decision, manifestId) => ({
    text: 'UPDATE tallies SET status = $2, manifest_id = $3 WHERE id = $1',
    values: [row.id, nextStatus(row.status, decision.content.directive), manifestId],
  }),
  resolution: {
    haltManifestId(row) {
      nextStatus(row.status, 'RESOLVE')
      return row.manifest_id!
    },
    resolve(row, halt, answer) {
      return {
        content: {
          tally_id: row.id,
          verdict: 'HUMAN_RESOLVED',
          directive: 'PROCEED',
          votes: halt.votes as string[],
          winner: answer.winner,
        },
        data: { winner: answer.winner },
      }
    },
    async recordResolution(tx, row, manifestId) {
      await writeTally(tx, row.id, nextStatus(row.status, 'RESOLVE'), manifestId)
    },
  },
}

function decided(content: TallyContent, final: boolean, escalation: Decided<TallyContent>['escalation']) {
  return { kind: 'decided' as const, decided: { content, final, escalation } }
}

async function setup(t: Parameters<typeof buildTestApp>[0]) {
  const app = await buildTestApp(t)
  await app.app.services.db.query(`CREATE TABLE tallies (
    id uuid PRIMARY KEY, votes text[] NOT NULL DEFAULT '{}', status text NOT NULL DEFAULT 'open', manifest_id uuid)`)
  return app
}

async function newTally(app: TestApp, votes: string[]) {
  const id = randomUUID()
  await app.app.services.db.query('INSERT INTO tallies (id, votes) VALUES ($1, $2::text[])', [id, votes])
  return id
}

async function vote(app: TestApp, id: string, choice: string) {
  await app.app.services.db.query('UPDATE tallies SET votes = votes || $2::text WHERE id = $1', [id, choice])
}

async function evaluate(app: TestApp, id: string) {
  return evaluateCase(app.app.services, tallyCase, id, 'system')
}

function envelopeOf(result: Awaited<ReturnType<typeof evaluate>>): StoredEnvelope {
  assert.equal(result.kind, 'manifest', JSON.stringify(result))
  return (result as { envelope: StoredEnvelope }).envelope
}

async function jwks(app: TestApp) {
  return (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
}

describe('the case engine, with a kind it has never seen', () => {
  it('answers pending, then issues one signed manifest of the new kind to 10 concurrent callers', async (t) => {
    const app = await setup(t)
    const id = await newTally(app, ['yes'])
    assert.deepEqual(await evaluate(app, id), { kind: 'pending', pending: { votes_needed: 1 } })
    await vote(app, id, 'yes')

    const results = await Promise.all(Array.from({ length: 10 }, () => evaluate(app, id)))
    const envelopes = results.map(envelopeOf)
    assert.equal(new Set(envelopes.map((e) => parseManifest(e).manifest_id)).size, 1, 'one manifest')
    const envelope = JSON.parse(envelopeText(envelopes[0]!))
    assert.equal(envelope.manifest.kind, 'tally')
    assert.equal(envelope.manifest.verdict, 'UNANIMOUS')
    assert.equal(envelope.manifest.winner, 'yes')
    assert.equal(envelope.manifest.supersedes, null)
    assert.deepEqual(await verifyEnvelope(envelope, await jwks(app)), {
      ok: true,
      kid: app.app.signingKey.kid,
    })
    assert.equal((await readTally(app.app.services.db, id, false))!.status, 'decided')

    // The manifest is in the one feed, served as signed, with its log position.
    const fetched = await app.request(app.adminKey, {
      method: 'GET',
      url: `/v1/manifests/${envelope.manifest.manifest_id}`,
    })
    // The same signed bytes; only the log position (assigned by the sequencer after the answer) may differ.
    assert.deepEqual({ ...(fetched.json() as object), audit_seq: null }, { ...envelope, audit_seq: null })
    const records = (await app.request(app.adminKey, { method: 'GET', url: '/v1/audit/records?limit=500' }))
      .json()
      .items.filter((r: { kind: string }) => r.kind === 'manifest.issued')
    assert.equal(records.length, 1)
    const placed = await app.request(app.adminKey, {
      method: 'GET',
      url: `/v1/manifests/${envelope.manifest.manifest_id}`,
    })
    assert.equal(records[0].seq, placed.json().audit_seq)
    assert.deepEqual(records[0].data, {
      manifest_digest: envelope.manifest_digest,
      directive: 'PROCEED',
      kind: 'tally',
      tally_id: id,
    })
  })

  it('keeps a non-final manifest for unchanged inputs and supersedes it when the inputs change', async (t) => {
    const app = await setup(t)
    const id = await newTally(app, ['yes', 'no'])
    const split = parseManifest(envelopeOf(await evaluate(app, id)))
    assert.equal(split.verdict, 'SPLIT')
    assert.equal(parseManifest(envelopeOf(await evaluate(app, id))).manifest_id, split.manifest_id)
    await vote(app, id, 'yes')
    const deadlock = parseManifest(envelopeOf(await evaluate(app, id)))
    assert.equal(deadlock.verdict, 'DEADLOCK')
    assert.equal(deadlock.supersedes, split.manifest_id)
    // Final: more votes change nothing.
    await vote(app, id, 'yes')
    assert.equal(parseManifest(envelopeOf(await evaluate(app, id))).manifest_id, deadlock.manifest_id)
  })

  it('escalates a HALT and lets exactly one of racing resolutions supersede it', async (t) => {
    const app = await setup(t)
    const id = await newTally(app, ['yes', 'no', 'maybe'])
    const halt = parseManifest(envelopeOf(await evaluate(app, id)))
    assert.equal(halt.directive, 'HALT')
    const open = await pageEscalations(app.app.services, { status: 'open' }, { limit: 10 })
    assert.equal(open.items.length, 1)
    assert.equal(open.items[0]!.case, 'tally')
    assert.equal(open.items[0]!.manifest_id, halt.manifest_id)
    assert.equal(open.items[0]!.verdict, 'DEADLOCK')
    assert.equal(open.items[0]!.case_id, id)

    const racing = await Promise.allSettled(
      Array.from({ length: 4 }, () =>
        resolveCase(app.app.services, tallyCase, id, { winner: 'yes' }, 'ops-key'),
      ),
    )
    const won = racing.filter((r) => r.status === 'fulfilled')
    assert.equal(won.length, 1)
    for (const lost of racing.filter((r) => r.status === 'rejected')) {
      assert.equal(((lost as PromiseRejectedResult).reason as AppError).error, 'CONFLICT')
    }
    const resolution = parseManifest((won[0] as PromiseFulfilledResult<StoredEnvelope>).value)
    assert.equal(resolution.verdict, 'HUMAN_RESOLVED')
    assert.equal(resolution.supersedes, halt.manifest_id)
    assert.equal(resolution.winner, 'yes')
    assert.equal(parseManifest(envelopeOf(await evaluate(app, id))).manifest_id, resolution.manifest_id)

    const resolved = await pageEscalations(app.app.services, { status: 'resolved' }, { limit: 10 })
    assert.equal(resolved.items[0]!.manifest_id, halt.manifest_id, 'the escalation keeps the HALT')
    assert.notEqual(resolved.items[0]!.resolved_at, null)
    const kinds = (await app.request(app.adminKey, { method: 'GET', url: '/v1/audit/records?limit=500' }))
      .json()
      .items.map((r: { kind: string }) => r.kind)
    assert.deepEqual(kinds, [
      'signing_key.added',
      'key.created',
      'manifest.issued',
      'escalation.opened',
      'resolution.recorded',
      'manifest.issued',
    ])
  })

  it('never signs a manifest over 4 MiB: a resolution that would make one is refused, nothing stored', async (t) => {
    const app = await setup(t)
    const id = await newTally(app, ['yes', 'no', 'maybe'])
    const halt = parseManifest(envelopeOf(await evaluate(app, id)))
    const winner = '\u0001'.repeat(Math.ceil(LIMITS.manifest_bytes / 6))
    await assert.rejects(
      resolveCase(app.app.services, tallyCase, id, { winner }, 'ops-key'),
      (err: AppError) =>
        err.error === 'LIMIT_EXCEEDED' &&
        err.extensions.limit === 'manifest_bytes' &&
        err.extensions.max === LIMITS.manifest_bytes,
    )
    const { rows } = await app.app.services.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM manifests',
    )
    assert.equal(rows[0]!.n, 1, 'only the HALT')
    // A resolution within the limit still settles it.
    const resolution = parseManifest(
      await resolveCase(app.app.services, tallyCase, id, { winner: 'yes' }, 'ops-key'),
    )
    assert.equal(resolution.supersedes, halt.manifest_id)
  })

  it('answers 404 for an unknown case and 409 for resolving one that did not HALT', async (t) => {
    const app = await setup(t)
    await assert.rejects(evaluate(app, randomUUID()), (err: AppError) => err.error === 'NOT_FOUND')
    const id = await newTally(app, ['yes', 'yes'])
    envelopeOf(await evaluate(app, id))
    await assert.rejects(
      resolveCase(app.app.services, tallyCase, id, { winner: 'no' }, 'ops-key'),
      (err: AppError) => err.error === 'CONFLICT',
    )
  })
})
