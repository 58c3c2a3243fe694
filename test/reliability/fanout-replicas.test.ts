import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createTestDatabase } from '../helpers/database.ts'
import {
  createFanout,
  FLOOR,
  needsContext,
  ST3_RESULT,
  ST5_RESULT,
  submitResult,
  vantageBody,
} from '../helpers/fanout-fixtures.ts'
import { assertStoreIntegrity } from '../helpers/integrity.ts'

/**
 * Fan-outs raced across replicas: several app instances on one database receive, for every fan-out at once, a
 * storm of reconcile calls with results, closes and resolutions mixed in. Each state of a fan-out's inputs must be
 * reconciled exactly once (one manifest, the same signed bytes from every replica), a HALT resolved at most once,
 * and the audit log must stay one gapless chain.
 */

const embedded = !process.env.TEST_DATABASE_URL
const REPLICAS = 3
const FANOUTS = embedded ? 6 : 9
const RECONCILES_PER_STORM = embedded ? 16 : 30
const RESOLUTIONS = 4

type Scenario = 'halt' | 'reevaluate' | 'close'

interface Manifest {
  manifest_id: string
  verdict: string
  directive: string
  supersedes: string | null
}

interface Call {
  kind: 'reconcile' | 'close' | 'resolution' | 'late-result'
  response: LightMyRequestResponse
}

describe('fan-outs raced across replicas on one database', () => {
  it('reconciles each state once under concurrent reconcile calls, and lets exactly one racing resolution win', async (t) => {
    const db = await createTestDatabase()
    const replicas: TestApp[] = []
    for (let i = 0; i < REPLICAS; i++) replicas.push(await buildTestApp(t, { database: db }))
    t.after(() => db.stop())
    const [first] = replicas as [TestApp]
    const scout = await first.key('orchestrator', ['scout'])
    const ops = await first.key('ops')
    const replica = (i: number) => replicas[i % replicas.length]!

    // Reconciling is idempotent, so a caller retries it on 503 as the client library does: on a machine far
    // busier than production, three replicas and their database in one process can shed a call (a connection
    // wait over its bound). What the race must never produce is a second manifest or a 500.
    const reconcile = async (i: number, id: string, close = false) => {
      for (let attempt = 1; ; attempt++) {
        const response = await replica(i + attempt - 1).request(scout, {
          method: 'POST',
          url: `/v1/fanouts/${id}/reconcile`,
          ...(close ? { payload: { close: true } } : {}),
        })
        if (response.statusCode !== 503 || attempt === 5) return response
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt))
      }
    }
    const resolve = (i: number, id: string) =>
      replica(i).request(ops, {
        method: 'POST',
        url: `/v1/fanouts/${id}/resolution`,
        payload: { facts: [{ fact: FLOOR, answer: null }], rationale: `ops, attempt ${i}` },
      })

    /** Every call of `kinds` sent at once, spread over the replicas. */
    const storm = (kinds: Call['kind'][], id: string) =>
      Promise.all(
        kinds.map(async (kind, i): Promise<Call> => {
          if (kind === 'resolution') return { kind, response: await resolve(i, id) }
          if (kind === 'late-result') {
            const late = { ...ST5_RESULT, summary: `second pass ${i}` }
            const response = await replica(i).request(scout, {
              method: 'POST',
              url: `/v1/fanouts/${id}/results`,
              payload: late,
            })
            return { kind, response }
          }
          return { kind, response: await reconcile(i, id, kind === 'close') }
        }),
      )

    const fanouts: { id: string; scenario: Scenario }[] = []
    for (let i = 0; i < FANOUTS; i++) {
      const scenario = (['halt', 'reevaluate', 'close'] as const)[i % 3]!
      const policy = scenario === 'reevaluate' ? { on_qualifier_difference: 'keep_all' } : undefined
      const fanout = await createFanout(replica(i), scout, vantageBody(policy ? { policy } : {}))
      await submitResult(replica(i + 1), scout, fanout.fanout_id, ST3_RESULT)
      if (scenario === 'halt') await submitResult(replica(i + 2), scout, fanout.fanout_id, ST5_RESULT)
      if (scenario === 'reevaluate')
        await submitResult(replica(i + 2), scout, fanout.fanout_id, needsContext('st_5'))
      fanouts.push({ id: fanout.fanout_id, scenario })
    }

    const reconciles = Array<Call['kind']>(RECONCILES_PER_STORM).fill('reconcile')
    const calls = new Map<string, Call[][]>()
    await Promise.all(
      fanouts.map(async ({ id, scenario }) => {
        if (scenario === 'halt') {
          // Resolutions and a revised result race the reconciliations: a resolution before the HALT is a 409, a
          // result before the HALT is counted, one after it is refused.
          const mixed = [...reconciles]
          mixed.splice(RECONCILES_PER_STORM / 2, 0, ...Array<Call['kind']>(RESOLUTIONS).fill('resolution'))
          mixed.splice(3, 0, 'late-result')
          const wave = await storm(mixed, id)
          const again = await storm(Array<Call['kind']>(RESOLUTIONS).fill('resolution'), id)
          calls.set(id, [wave, again])
        } else if (scenario === 'reevaluate') {
          const asked = await storm(reconciles, id)
          await submitResult(replica(1), scout, id, ST5_RESULT)
          const answered = await storm(reconciles, id)
          calls.set(id, [asked, answered])
        } else {
          const mixed = reconciles.map((kind, i): Call['kind'] => (i % 5 === 2 ? 'close' : kind))
          calls.set(id, [await storm(mixed, id)])
        }
      }),
    )

    let wonResolutions = 0
    for (const { id, scenario } of fanouts) {
      const waves = calls.get(id)!
      const all = waves.flat()
      assert.ok(
        all.every((c) => c.response.statusCode < 500),
        `no 5xx: ${all
          .map(
            (c) =>
              `${c.kind} ${c.response.statusCode}${c.response.statusCode >= 500 ? ` ${c.response.body}` : ''}`,
          )
          .join(', ')}`,
      )
      const listed = await first.request(scout, {
        method: 'GET',
        url: `/v1/manifests?fanout_id=${id}&limit=500`,
      })
      const manifests = (listed.json().items as { manifest: Manifest; manifest_digest: string }[]).map(
        (e) => e.manifest,
      )
      const machine = manifests.filter((m) => m.verdict !== 'HUMAN_RESOLVED')
      const human = manifests.filter((m) => m.verdict === 'HUMAN_RESOLVED')

      /** Every 200 of `wave` answers with one of `allowed`, each with one digest whichever replica answered. */
      const answeredWith = (wave: Call[], allowed: string[]) => {
        const digests = new Map<string, Set<string>>()
        for (const c of wave.filter((x) => x.kind === 'reconcile' || x.kind === 'close')) {
          if (c.response.statusCode === 202) continue
          assert.equal(c.response.statusCode, 200, c.response.body)
          const { manifest, manifest_digest } = c.response.json()
          assert.ok(allowed.includes(manifest.manifest_id), `${scenario}: answered with an issued manifest`)
          digests.set(
            manifest.manifest_id,
            (digests.get(manifest.manifest_id) ?? new Set()).add(manifest_digest),
          )
        }
        for (const set of digests.values()) assert.equal(set.size, 1, 'every replica returns the same bytes')
      }

      if (scenario === 'halt') {
        assert.equal(machine.length, 1, 'one reconciliation of the one state')
        assert.equal(machine[0]!.verdict, 'CONTESTED')
        const resolutions = all.filter((c) => c.kind === 'resolution')
        const won = resolutions.filter((c) => c.response.statusCode === 201)
        assert.equal(
          won.length,
          1,
          `exactly one resolution wins: ${resolutions.map((c) => c.response.statusCode)}`,
        )
        assert.ok(resolutions.every((c) => [201, 409].includes(c.response.statusCode)))
        wonResolutions += 1
        assert.equal(human.length, 1)
        assert.equal(human[0]!.supersedes, machine[0]!.manifest_id)
        answeredWith(all, [machine[0]!.manifest_id, human[0]!.manifest_id])
        const [late] = all.filter((c) => c.kind === 'late-result')
        assert.ok([201, 409].includes(late!.response.statusCode), late!.response.body)
        if (late!.response.statusCode === 409) {
          assert.equal(late!.response.json().manifest_id, machine[0]!.manifest_id)
        }
      } else if (scenario === 'reevaluate') {
        assert.deepEqual(
          machine.map((m) => m.directive),
          ['REEVALUATE', 'PROCEED'],
          'one manifest per state of the inputs',
        )
        assert.equal(machine[1]!.supersedes, machine[0]!.manifest_id)
        answeredWith(waves[0]!, [machine[0]!.manifest_id])
        answeredWith(waves[1]!, [machine[1]!.manifest_id])
      } else {
        assert.equal(machine.length, 1)
        assert.equal(machine[0]!.verdict, 'INCOMPLETE')
        answeredWith(all, [machine[0]!.manifest_id])
        for (const c of all.filter((x) => x.kind === 'close')) assert.equal(c.response.statusCode, 200)
        const after = await reconcile(0, id)
        assert.equal(
          after.json().manifest.manifest_id,
          machine[0]!.manifest_id,
          'a closed fan-out stays closed',
        )
      }
      if (scenario !== 'halt') assert.equal(human.length, 0)
    }

    const resolved = await first.request(ops, {
      method: 'GET',
      url: '/v1/escalations?case=fanout&status=resolved&limit=500',
    })
    assert.equal(resolved.json().items.length, wonResolutions)
    const open = await first.request(ops, {
      method: 'GET',
      url: '/v1/escalations?case=fanout&status=open&limit=500',
    })
    assert.equal(open.json().items.length, fanouts.filter((f) => f.scenario === 'close').length)
    const verify = await first.request(ops, { method: 'GET', url: '/v1/audit/verify' })
    assert.equal(verify.json().ok, true, verify.body)
    const integrity = await assertStoreIntegrity(db.connectionString)
    t.diagnostic(
      `replicas ${REPLICAS}, fan-outs ${FANOUTS}, calls ${[...calls.values()].flat(2).length}, ` +
        `manifests ${integrity.manifests}, audit records ${integrity.auditRecords}`,
    )
  })
})
