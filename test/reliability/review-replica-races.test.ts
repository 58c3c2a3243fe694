import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import pg from 'pg'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'
import { assertStoreIntegrity } from '../helpers/integrity.ts'
import {
  createReview,
  DIGEST_1,
  type Mode,
  postDecide,
  postRevision,
  postVerdict,
  type ReviewManifest,
  verdict,
} from '../helpers/review-fixtures.ts'

/**
 * Reviews across replicas: several app instances on one database receive, for every review at once, storms of
 * decide calls with the judges' verdicts (some raced by the same judge), NEEDS_CONTEXT answers and revisions
 * mixed in. Each revision state (the revision and the verdicts recorded for it) must get exactly one manifest,
 * each revision at most one final one, every answer must agree with the manifests stored, and the audit log must
 * stay one gapless chain with a record for every change.
 */

const REPLICAS = 3
/** The race of a verdict that may come after the decision: the debate's meta-judge, never waited for. */
const LATE_RACE = 'moderator-1'
const DECIDES_PER_WAVE = 24

type Scenario = 'apply' | 'pause' | 'revise' | 'council'
const MODE_OF: Record<Scenario, Mode> = {
  apply: 'two_stage',
  pause: 'do_and_judge',
  revise: 'debate',
  council: 'council',
}

interface Call {
  kind: 'decide' | 'verdict' | 'revision'
  /** For verdicts: which race it belongs to (same judge, same or different bodies). */
  race?: string
  response: LightMyRequestResponse
}

describe('reviews across replicas on one database', () => {
  it('issues one manifest per revision state under concurrent decide calls, racing verdicts and revisions', async (t) => {
    const db = await createTestDatabase()
    const replicas: TestApp[] = []
    for (let i = 0; i < REPLICAS; i++) replicas.push(await buildTestApp(t, { database: db }))
    // Registered after the apps: hooks run in order, so the apps close before their database goes.
    t.after(() => db.stop())
    const [first] = replicas as [TestApp]
    const key = await first.key('orchestrator', ['orch-a'])
    const replica = (i: number) => replicas[i % replicas.length]!

    const scenarios: Scenario[] = [
      'apply',
      'pause',
      'revise',
      'council',
      'apply',
      'pause',
      'revise',
      'council',
    ]
    const reviews: { id: string; scenario: Scenario }[] = []
    for (const [i, scenario] of scenarios.entries()) {
      const review = await createReview(replica(i), key, MODE_OF[scenario])
      reviews.push({ id: review.review_id, scenario })
    }

    /** A wave: decide calls on every replica with `extras` sent among them at random points. */
    const wave = async (id: string, extras: Omit<Call, 'response'>[], bodies: Record<string, unknown>[]) => {
      const calls: Promise<Call>[] = []
      const at = new Map<number, number[]>()
      extras.forEach((_, e) => {
        const slot = Math.floor(Math.random() * (DECIDES_PER_WAVE + 1))
        at.set(slot, [...(at.get(slot) ?? []), e])
      })
      for (let i = 0; i <= DECIDES_PER_WAVE; i++) {
        for (const e of at.get(i) ?? []) {
          const extra = extras[e]!
          const target = replica(i + e)
          const sent =
            extra.kind === 'verdict'
              ? postVerdict(target, key, id, bodies[e]!)
              : postRevision(target, key, id, (bodies[e] as { digest: string }).digest)
          calls.push(sent.then((response) => ({ ...extra, response })))
        }
        if (i < DECIDES_PER_WAVE) {
          calls.push(postDecide(replica(i), key, id).then((response) => ({ kind: 'decide', response })))
        }
      }
      return Promise.all(calls)
    }
    const verdicts = (race: string, bodies: Record<string, unknown>[]) => ({
      extras: bodies.map(() => ({ kind: 'verdict' as const, race })),
      bodies,
    })
    const join = (...parts: { extras: Omit<Call, 'response'>[]; bodies: Record<string, unknown>[] }[]) => ({
      extras: parts.flatMap((p) => p.extras),
      bodies: parts.flatMap((p) => p.bodies),
    })

    /** Each scenario as waves of concurrent calls; every wave's verdicts race with its decide calls. */
    const play = async (id: string, scenario: Scenario): Promise<Call[]> => {
      const all: Call[] = []
      // After each wave, one more decide settles the state the wave left, so the next wave starts from it.
      const run = async (part: ReturnType<typeof join>) => {
        all.push(...(await wave(id, part.extras, part.bodies)))
        all.push({ kind: 'decide', response: await postDecide(replica(waves), key, id) })
        waves += 1
      }
      switch (scenario) {
        case 'apply':
          await run(verdicts('spec', [verdict('spec', 'DONE')]))
          await run(
            join(
              verdicts('quality-same', Array(4).fill(verdict('quality', 'DONE_WITH_CONCERNS'))),
              verdicts(
                'quality-same',
                [1, 2, 3].map((n) => verdict('quality', 'DONE_WITH_CONCERNS', 0, { summary: `other ${n}` })),
              ),
            ),
          )
          break
        case 'pause':
          await run(verdicts('solo-question', [verdict('solo', 'NEEDS_CONTEXT')]))
          await run(verdicts('solo-answered', [verdict('solo', 'DONE')]))
          break
        case 'revise':
          await run(
            join(
              verdicts('amy', [verdict('amy', 'DONE')]),
              verdicts('zed', Array(3).fill(verdict('zed', 'BLOCKED'))),
            ),
          )
          await run({
            extras: Array(4).fill({ kind: 'revision' }),
            bodies: Array(4).fill({ digest: DIGEST_1 }),
          })
          // The meta-judge is never waited for: its verdict races the decision, counted or refused naming it.
          await run(
            join(
              verdicts('amy-1', [verdict('amy', 'DONE', 1)]),
              verdicts('zed-1', [verdict('zed', 'DONE', 1)]),
              verdicts(LATE_RACE, [verdict('moderator', 'DONE', 1)]),
            ),
          )
          break
        case 'council':
          await run(
            join(
              verdicts('c1', [
                verdict('c1', 'DONE', 0, { findings: [{ severity: 'low', title: 'Typo' }] }),
                verdict('c1', 'DONE', 0, { findings: [{ severity: 'high', title: 'Typo' }] }),
              ]),
              verdicts('c2', [
                verdict('c2', 'BLOCKED', 0, { findings: [{ severity: 'medium', title: 'typo ' }] }),
              ]),
              verdicts('c3', [verdict('c3', 'DONE')]),
            ),
          )
      }
      return all
    }
    let waves = 0
    const results = await Promise.all(reviews.map((r) => play(r.id, r.scenario)))

    let decides = 0
    for (const [index, { id, scenario }] of reviews.entries()) {
      const calls = results[index]!
      assert.ok(
        calls.every((c) => c.response.statusCode < 500),
        `no 5xx for ${scenario}: ${calls.map((c) => `${c.kind} ${c.response.statusCode} ${c.response.statusCode >= 500 ? c.response.body : ''}`).join(', ')}`,
      )
      const listed = await first.request(key, {
        method: 'GET',
        url: `/v1/manifests?review_id=${id}&limit=500`,
      })
      const manifests = (listed.json().items as { manifest: ReviewManifest; manifest_digest: string }[]).map(
        (e) => e.manifest,
      )
      const byId = new Map(manifests.map((m) => [m.manifest_id, m]))

      // One manifest per revision state, at most one final per revision, each superseding its revision's PAUSE.
      const states = manifests.map(
        (m) => `${m.revision}|${m.verdicts.map((v) => `${v.judge_id}:${v.verdict_digest}`).join(',')}`,
      )
      assert.equal(new Set(states).size, states.length, `one manifest per revision state (${scenario})`)
      for (const revision of new Set(manifests.map((m) => m.revision))) {
        const ofRevision = manifests.filter((m) => m.revision === revision)
        assert.ok(
          ofRevision.filter((m) => m.directive !== 'PAUSE').length <= 1,
          'one final manifest per revision',
        )
        ofRevision.forEach((m, i) => {
          assert.equal(
            m.supersedes,
            i === 0 ? null : ofRevision[i - 1]!.manifest_id,
            'supersedes the PAUSE before',
          )
        })
      }
      const expected: Record<Scenario, string[]> = {
        apply: ['0 APPLY'],
        pause: ['0 PAUSE', '0 APPLY'],
        revise: ['0 REVISE', '1 APPLY'],
        council: ['0 ADVISORY'],
      }
      assert.deepEqual(
        manifests.map((m) => `${m.revision} ${m.directive}`),
        expected[scenario],
        `manifests of ${scenario}`,
      )

      // Every 200 answer is a stored manifest, served with the same signed bytes by every replica.
      const digests = new Map<string, Set<string>>()
      for (const c of calls.filter((x) => x.kind === 'decide')) {
        decides += 1
        assert.ok([200, 202].includes(c.response.statusCode), c.response.body)
        if (c.response.statusCode !== 200) continue
        const { manifest, manifest_digest } = c.response.json()
        assert.ok(byId.has(manifest.manifest_id), 'decide answers with a stored manifest')
        digests.set(
          manifest.manifest_id,
          (digests.get(manifest.manifest_id) ?? new Set()).add(manifest_digest),
        )
      }
      for (const set of digests.values()) assert.equal(set.size, 1, 'one signed form per manifest')

      // Racing verdicts of one judge: exactly one accepted; the same body again 200, another 409.
      const races = new Map<string, Call[]>()
      for (const c of calls.filter((x) => x.kind === 'verdict'))
        races.set(c.race!, [...(races.get(c.race!) ?? []), c])
      for (const [race, raced] of races) {
        if (race === LATE_RACE) continue
        const codes = raced.map((c) => c.response.statusCode)
        assert.equal(codes.filter((code) => code === 201).length, 1, `one winner in ${race}: ${codes}`)
        assert.ok(
          codes.every((code) => [200, 201, 409].includes(code)),
          `${race}: ${codes}`,
        )
      }
      // Every accepted verdict counts in a manifest of its revision; the meta-judge's, refused, names the
      // manifest that decided its revision without it.
      for (const c of calls.filter((x) => x.kind === 'verdict' && x.response.statusCode === 201)) {
        const accepted = c.response.json() as { judge_id: string; revision: number; verdict_digest: string }
        assert.ok(
          manifests.some(
            (m) =>
              m.revision === accepted.revision &&
              m.verdicts.some(
                (v) => v.judge_id === accepted.judge_id && v.verdict_digest === accepted.verdict_digest,
              ),
          ),
          `accepted verdict of ${accepted.judge_id} (revision ${accepted.revision}) is counted (${scenario})`,
        )
      }
      for (const c of calls.filter((x) => x.race === LATE_RACE)) {
        assert.ok([201, 409].includes(c.response.statusCode), c.response.body)
        if (c.response.statusCode !== 409) continue
        const decided = manifests.find((m) => m.revision === 1 && m.directive !== 'PAUSE')!
        assert.equal(
          c.response.json().manifest_id,
          decided.manifest_id,
          'a late meta verdict names the manifest',
        )
        assert.ok(!decided.verdicts.some((v) => v.judge_id === 'moderator'))
      }
      const revisions = calls.filter((c) => c.kind === 'revision').map((c) => c.response.statusCode)
      if (revisions.length > 0) {
        // The winner changed the subject: the others now ask for a revision to the subject under review.
        assert.deepEqual(revisions.sort(), [201, 422, 422, 422], 'one of the racing revisions wins')
      }

      // Afterwards every replica answers with the final manifest.
      const final = manifests[manifests.length - 1]!
      for (const r of replicas) {
        const again = await postDecide(r, key, id)
        assert.equal(again.json().manifest.manifest_id, final.manifest_id)
      }
    }
    assert.equal(waves, 16)
    assert.equal(decides, (DECIDES_PER_WAVE + 1) * waves)

    const ops = await first.key('ops')
    const verify = await first.request(ops, { method: 'GET', url: '/v1/audit/verify' })
    assert.equal(verify.json().ok, true, verify.body)
    await assertStoreIntegrity(db.connectionString)
    const client = new pg.Client({ connectionString: db.connectionString })
    await client.connect()
    try {
      const { rows } = await client.query(`SELECT
          (SELECT count(*) FROM reviews r WHERE NOT EXISTS (SELECT 1 FROM audit_records a
             WHERE a.kind = 'review.created' AND a.data->>'review_id' = r.id::text))::int AS reviews,
          (SELECT count(*) FROM review_verdicts v WHERE NOT EXISTS (SELECT 1 FROM audit_records a
             WHERE a.kind = 'verdict.recorded' AND a.data->>'review_id' = v.review_id::text
               AND a.data->>'verdict_digest' = v.verdict_digest))::int AS verdicts,
          (SELECT count(*) FROM audit_records WHERE kind = 'verdict.recorded')::int
            - (SELECT count(*) FROM review_verdicts)::int AS records_without_verdict,
          (SELECT count(*) FROM reviews WHERE revision > 0)::int
            - (SELECT count(*) FROM audit_records WHERE kind = 'revision.recorded')::int AS revisions`)
      assert.deepEqual(
        rows[0],
        { reviews: 0, verdicts: 0, records_without_verdict: 0, revisions: 0 },
        'every review change committed with its audit record, refused ones with none',
      )
    } finally {
      await client.end()
    }
    t.diagnostic(`replicas ${REPLICAS}, reviews ${reviews.length}, decide calls ${decides}`)
  })
})
