import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import type { Role } from '../../src/domain/vocabulary.ts'
import { listOperations } from '../../src/http/openapi-document.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createFanout, FLOOR, haltedFanout, ST3_RESULT, vantageBody } from '../helpers/fanout-fixtures.ts'
import { createOutcome, evaluate, interpret } from '../helpers/fixtures.ts'
import { json, startTarget } from '../helpers/http-target.ts'
import { createReview, DIGEST_1, decide, judge, reviewBody, verdict } from '../helpers/review-fixtures.ts'

const ROLES: Role[] = ['orchestrator', 'dashboard', 'ops', 'admin']
const READERS: Role[] = ['orchestrator', 'dashboard', 'ops', 'admin']
const WRITERS: Role[] = ['orchestrator', 'admin']
const OPS: Role[] = ['ops', 'admin']
const ADMIN: Role[] = ['admin']

interface RouteCase {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  /** The route as OpenAPI names it. */
  route: string
  allowed: Role[]
  /** A request that succeeds (2xx) for an allowed role; fresh fixtures each call. */
  request: () => Promise<InjectOptions>
}

/**
 * Every authenticated route × every role: no key and an unknown key → 401, a role outside the route's roles →
 * 403, an allowed role → 2xx. The table is checked against the OpenAPI document so a new route cannot slip by.
 */
describe('route × role authorization', () => {
  it('answers 401, 403 or 2xx exactly as the roles are assigned', async (t) => {
    const app = await buildTestApp(t)
    const target = await startTarget(t, (_req, res) => json(res, 200, { state: 'settled' }))
    const keys = Object.fromEntries(
      await Promise.all(
        ROLES.map(async (role) => [
          role,
          role === 'orchestrator' ? await app.key(role, ['orch-a', 'orch-b']) : await app.key(role),
        ]),
      ),
    ) as Record<Role, string>
    const fixtures = new Fixtures(app, keys.admin, target.url)
    const probeId = await fixtures.probe()
    const decided = await fixtures.decided()
    const halted = await haltedFanout(app, keys.admin, { orchestrator_id: 'orch-a' })

    const table: RouteCase[] = [
      {
        method: 'POST',
        route: '/v1/admin/keys',
        allowed: ADMIN,
        request: async () => ({ url: '/v1/admin/keys', payload: { role: 'dashboard', label: 'x' } }),
      },
      {
        method: 'GET',
        route: '/v1/admin/keys',
        allowed: ADMIN,
        request: async () => ({ url: '/v1/admin/keys' }),
      },
      {
        method: 'DELETE',
        route: '/v1/admin/keys/{id}',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/admin/keys/${await fixtures.keyId()}` }),
      },
      {
        method: 'POST',
        route: '/v1/outcomes',
        allowed: WRITERS,
        request: async () => ({ url: '/v1/outcomes', payload: fixtures.outcomeBody() }),
      },
      {
        method: 'GET',
        route: '/v1/outcomes',
        allowed: READERS,
        request: async () => ({ url: '/v1/outcomes' }),
      },
      {
        method: 'GET',
        route: '/v1/outcomes/{id}',
        allowed: READERS,
        request: async () => ({ url: `/v1/outcomes/${decided.outcomeId}` }),
      },
      {
        method: 'POST',
        route: '/v1/outcomes/{id}/evidence',
        allowed: WRITERS,
        request: async () => ({
          url: `/v1/outcomes/${await fixtures.open()}/evidence`,
          payload: { evidence: [{ kind: 'log', content: 'more' }] },
        }),
      },
      {
        method: 'POST',
        route: '/v1/outcomes/{id}/interpretations',
        allowed: WRITERS,
        request: async () => ({
          url: `/v1/outcomes/${await fixtures.open()}/interpretations`,
          payload: { orchestrator_id: 'orch-a', outcome_interpretation: 'success', success_criterion: {} },
        }),
      },
      {
        method: 'POST',
        route: '/v1/outcomes/{id}/evaluate',
        allowed: WRITERS,
        request: async () => ({ url: `/v1/outcomes/${await fixtures.interpreted()}/evaluate` }),
      },
      {
        method: 'POST',
        route: '/v1/outcomes/{id}/resolution',
        allowed: OPS,
        request: async () => ({
          url: `/v1/outcomes/${await fixtures.halted()}/resolution`,
          payload: { outcome: 'success', rationale: 'checked' },
        }),
      },
      {
        method: 'GET',
        route: '/v1/manifests',
        allowed: READERS,
        request: async () => ({ url: '/v1/manifests' }),
      },
      {
        method: 'GET',
        route: '/v1/manifests/{id}',
        allowed: READERS,
        request: async () => ({ url: `/v1/manifests/${decided.manifestId}` }),
      },
      {
        method: 'POST',
        route: '/v1/probes',
        allowed: ADMIN,
        request: async () => ({ url: '/v1/probes', payload: fixtures.probeBody() }),
      },
      { method: 'GET', route: '/v1/probes', allowed: ADMIN, request: async () => ({ url: '/v1/probes' }) },
      {
        method: 'GET',
        route: '/v1/probes/{id}',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/probes/${probeId}` }),
      },
      {
        method: 'PUT',
        route: '/v1/probes/{id}',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/probes/${probeId}`, payload: fixtures.probeBody() }),
      },
      {
        method: 'POST',
        route: '/v1/probes/{id}/dry-run',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/probes/${probeId}/dry-run`, payload: {} }),
      },
      {
        method: 'GET',
        route: '/v1/audit/records',
        allowed: OPS,
        request: async () => ({ url: '/v1/audit/records' }),
      },
      {
        method: 'GET',
        route: '/v1/audit/outcomes/{id}',
        allowed: OPS,
        request: async () => ({ url: `/v1/audit/outcomes/${decided.outcomeId}` }),
      },
      {
        method: 'GET',
        route: '/v1/audit/verify',
        allowed: OPS,
        request: async () => ({ url: '/v1/audit/verify' }),
      },
      {
        method: 'GET',
        route: '/v1/audit/checkpoint',
        allowed: READERS,
        request: async () => ({ url: '/v1/audit/checkpoint' }),
      },
      {
        method: 'GET',
        route: '/v1/audit/proofs/inclusion',
        allowed: READERS,
        request: async () => ({ url: '/v1/audit/proofs/inclusion?seq=1' }),
      },
      {
        method: 'GET',
        route: '/v1/audit/proofs/consistency',
        allowed: READERS,
        request: async () => ({ url: '/v1/audit/proofs/consistency?from_size=1&to_size=2' }),
      },
      {
        method: 'GET',
        route: '/v1/manifests/{id}/inclusion',
        allowed: READERS,
        request: async () => ({ url: `/v1/manifests/${decided.manifestId}/inclusion` }),
      },
      {
        method: 'GET',
        route: '/v1/escalations',
        allowed: OPS,
        request: async () => ({ url: '/v1/escalations' }),
      },
      {
        method: 'POST',
        route: '/v1/reviews',
        allowed: WRITERS,
        request: async () => ({ url: '/v1/reviews', payload: reviewBody('do_and_judge') }),
      },
      {
        method: 'GET',
        route: '/v1/reviews',
        allowed: READERS,
        request: async () => ({ url: '/v1/reviews' }),
      },
      {
        method: 'GET',
        route: '/v1/reviews/{id}',
        allowed: READERS,
        request: async () => ({ url: `/v1/reviews/${await fixtures.review()}` }),
      },
      {
        method: 'POST',
        route: '/v1/reviews/{id}/verdicts',
        allowed: WRITERS,
        request: async () => ({
          url: `/v1/reviews/${await fixtures.review()}/verdicts`,
          payload: verdict('solo', 'DONE'),
        }),
      },
      {
        method: 'POST',
        route: '/v1/fanouts',
        allowed: WRITERS,
        request: async () => ({ url: '/v1/fanouts', payload: vantageBody({ orchestrator_id: 'orch-a' }) }),
      },
      {
        method: 'GET',
        route: '/v1/fanouts',
        allowed: READERS,
        request: async () => ({ url: '/v1/fanouts' }),
      },
      {
        method: 'GET',
        route: '/v1/fanouts/{id}',
        allowed: READERS,
        request: async () => ({ url: `/v1/fanouts/${halted.fanout.fanout_id}` }),
      },
      {
        method: 'POST',
        route: '/v1/fanouts/{id}/results',
        allowed: WRITERS,
        request: async () => ({
          url: `/v1/fanouts/${(await createFanout(app, keys.admin, vantageBody({ orchestrator_id: 'orch-a' }))).fanout_id}/results`,
          payload: ST3_RESULT,
        }),
      },
      {
        method: 'POST',
        route: '/v1/reviews/{id}/revisions',
        allowed: WRITERS,
        request: async () => ({
          url: `/v1/reviews/${await fixtures.reviewToRevise()}/revisions`,
          payload: { subject: { digest: DIGEST_1 } },
        }),
      },
      {
        method: 'POST',
        route: '/v1/fanouts/{id}/reconcile',
        allowed: WRITERS,
        request: async () => ({
          url: `/v1/fanouts/${(await createFanout(app, keys.admin, vantageBody({ orchestrator_id: 'orch-b' }))).fanout_id}/reconcile`,
        }),
      },
      {
        method: 'POST',
        route: '/v1/reviews/{id}/decide',
        allowed: WRITERS,
        request: async () => ({ url: `/v1/reviews/${await fixtures.review()}/decide` }),
      },
      {
        method: 'GET',
        route: '/v1/audit/reviews/{id}',
        allowed: OPS,
        request: async () => ({ url: `/v1/audit/reviews/${await fixtures.review()}` }),
      },
      {
        method: 'POST',
        route: '/v1/fanouts/{id}/resolution',
        allowed: OPS,
        request: async () => ({
          url: `/v1/fanouts/${(await haltedFanout(app, keys.admin, { orchestrator_id: 'orch-a' })).fanout.fanout_id}/resolution`,
          payload: { facts: [{ fact: FLOOR, answer: null }], rationale: 'checked' },
        }),
      },
      {
        method: 'PUT',
        route: '/v1/subagents/{subagent_id}/policy',
        allowed: ADMIN,
        request: async () => ({
          url: '/v1/subagents/roles-policy/policy',
          payload: { expected_orchestrators: ['orch-a', 'orch-b'], probe: { probe_id: probeId } },
        }),
      },
      {
        method: 'GET',
        route: '/v1/subagents/{subagent_id}/policy',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/subagents/${await fixtures.policy()}/policy` }),
      },
      {
        method: 'DELETE',
        route: '/v1/subagents/{subagent_id}/policy',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/subagents/${await fixtures.policy()}/policy` }),
      },
      {
        method: 'GET',
        route: '/v1/audit/fanouts/{id}',
        allowed: OPS,
        request: async () => ({ url: `/v1/audit/fanouts/${halted.fanout.fanout_id}` }),
      },
      {
        method: 'POST',
        route: '/v1/webhooks',
        allowed: ADMIN,
        request: async () => ({ url: '/v1/webhooks', payload: fixtures.webhookBody() }),
      },
      {
        method: 'GET',
        route: '/v1/webhooks',
        allowed: ADMIN,
        request: async () => ({ url: '/v1/webhooks' }),
      },
      {
        method: 'GET',
        route: '/v1/webhooks/{id}',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/webhooks/${await fixtures.webhook()}` }),
      },
      {
        method: 'PATCH',
        route: '/v1/webhooks/{id}',
        allowed: ADMIN,
        request: async () => ({
          url: `/v1/webhooks/${await fixtures.webhook()}`,
          payload: { description: 'x' },
        }),
      },
      {
        method: 'DELETE',
        route: '/v1/webhooks/{id}',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/webhooks/${await fixtures.webhook()}` }),
      },
      {
        method: 'POST',
        route: '/v1/webhooks/{id}/rotate-secret',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/webhooks/${await fixtures.webhook()}/rotate-secret` }),
      },
      {
        method: 'GET',
        route: '/v1/webhooks/{id}/deliveries',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/webhooks/${await fixtures.webhook()}/deliveries` }),
      },
      {
        method: 'POST',
        route: '/v1/webhooks/{id}/test',
        allowed: ADMIN,
        request: async () => ({ url: `/v1/webhooks/${await fixtures.webhook()}/test` }),
      },
      {
        method: 'POST',
        route: '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver',
        allowed: ADMIN,
        request: async () => {
          const { webhookId, deliveryId } = await fixtures.webhookDelivery()
          return { url: `/v1/webhooks/${webhookId}/deliveries/${deliveryId}/redeliver` }
        },
      },
    ]

    // Completeness: every authenticated operation in the OpenAPI document is in the table (the stream is tested
    // for roles in manifest-stream.test.ts, since an open SSE response cannot be injected).
    const documented = Object.entries(app.app.swagger().paths ?? {}).flatMap(([path, item]) =>
      Object.keys(item as object).map((method) => `${method.toUpperCase()} ${path}`),
    )
    // Public operations are those the document says need no key (`security: []`; openapi.test.ts checks they
    // answer without one); every other one must be in the table, whose checks start with 401 without a key.
    const publicRoutes = new Set([
      ...listOperations(app.app.swagger() as Record<string, unknown>)
        .filter(({ operation }) => Array.isArray(operation.security) && operation.security.length === 0)
        .map(({ key }) => key),
      'GET /v1/manifests/stream',
    ])
    const covered = new Set(table.map((c) => `${c.method} ${c.route}`))
    assert.deepEqual(
      documented.filter((r) => !publicRoutes.has(r) && !covered.has(r)),
      [],
      'routes missing from the table',
    )

    let checked = 0
    for (const c of table) {
      const options = await c.request()
      const label = `${c.method} ${c.route}`
      const none = await app.request(null, { ...options, method: c.method })
      assert.equal(none.statusCode, 401, `${label} without a key`)
      const unknown = await app.request('arb_not-a-real-key', { ...options, method: c.method })
      assert.equal(unknown.statusCode, 401, `${label} with an unknown key`)
      for (const role of ROLES) {
        const response = await app.request(keys[role], { ...(await c.request()), method: c.method })
        if (c.allowed.includes(role)) {
          assert.ok(
            response.statusCode >= 200 && response.statusCode < 300,
            `${label} as ${role}: ${response.statusCode} ${response.body}`,
          )
        } else {
          assert.equal(response.statusCode, 403, `${label} as ${role}: ${response.body}`)
          assert.match(String(response.headers['content-type']), /application\/problem\+json/)
        }
        checked++
      }
    }
    assert.equal(checked, table.length * ROLES.length)
  })

  it('stops accepting a revoked key on the very next request', async (t) => {
    const app = await buildTestApp(t)
    const created = (
      await app.request(app.adminKey, {
        method: 'POST',
        url: '/v1/admin/keys',
        payload: { role: 'ops', label: 'temp' },
      })
    ).json()
    assert.equal((await app.request(created.key, { method: 'GET', url: '/v1/escalations' })).statusCode, 200)
    assert.equal(
      (await app.request(app.adminKey, { method: 'DELETE', url: `/v1/admin/keys/${created.id}` })).statusCode,
      204,
    )
    assert.equal((await app.request(created.key, { method: 'GET', url: '/v1/escalations' })).statusCode, 401)
    const listed = (await app.request(app.adminKey, { method: 'GET', url: '/v1/admin/keys' })).json()
    const revoked = listed.items.find((k: { id: string }) => k.id === created.id)
    assert.notEqual(revoked.revoked_at, null)
    assert.ok(!JSON.stringify(listed).includes(created.key), 'secrets are never listed')
    const { rows } = await app.app.db.query('SELECT key_hash FROM api_keys WHERE id = $1', [created.id])
    assert.notEqual(rows[0].key_hash, created.key, 'stored hashed')
    assert.match(rows[0].key_hash, /^[0-9a-f]{64}$/)
  })

  it('requires orchestrator ids for orchestrator keys', async (t) => {
    const app = await buildTestApp(t)
    const response = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'orchestrator', label: 'x' },
    })
    assert.equal(response.statusCode, 400)
    assert.equal(response.json().errors[0].path, 'body/orchestrator_ids')
  })
})

class Fixtures {
  private n = 0
  constructor(
    private readonly app: TestApp,
    private readonly admin: string,
    private readonly targetUrl: string,
  ) {}

  outcomeBody() {
    this.n += 1
    return {
      subagent_id: 'roles',
      run_id: `roles-${process.pid}-${Date.now()}-${this.n}`,
      evidence: [{ kind: 'exit_code', content: 0 }],
    }
  }

  /** A webhook to a name that never resolves (`.invalid`): its deliveries fail at once, and stay harmless. */
  webhookBody() {
    return { url: 'https://hooks.example.invalid/arbiter', events: ['manifest.issued'] }
  }

  async webhook(): Promise<string> {
    const response = await this.app.request(this.admin, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: this.webhookBody(),
    })
    assert.equal(response.statusCode, 201, response.body)
    return response.json().webhook_id
  }

  async webhookDelivery(): Promise<{ webhookId: string; deliveryId: string }> {
    const webhookId = await this.webhook()
    const response = await this.app.request(this.admin, {
      method: 'POST',
      url: `/v1/webhooks/${webhookId}/test`,
    })
    assert.equal(response.statusCode, 202, response.body)
    return { webhookId, deliveryId: response.json().delivery_id }
  }

  probeBody() {
    return {
      name: 'p',
      request: { url: `${this.targetUrl}/x` },
      predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
    }
  }

  async probe(): Promise<string> {
    return (
      await this.app.request(this.admin, { method: 'POST', url: '/v1/probes', payload: this.probeBody() })
    ).json().probe_id
  }

  /** A fresh sub-agent with a policy: its GET and DELETE answer 2xx. */
  async policy(): Promise<string> {
    this.n += 1
    const subagentId = `roles-policy-${this.n}`
    const response = await this.app.request(this.admin, {
      method: 'PUT',
      url: `/v1/subagents/${subagentId}/policy`,
      payload: { expected_orchestrators: ['orch-a'] },
    })
    assert.equal(response.statusCode, 200, response.body)
    return subagentId
  }

  async keyId(): Promise<string> {
    return (
      await this.app.request(this.admin, {
        method: 'POST',
        url: '/v1/admin/keys',
        payload: { role: 'dashboard', label: 'victim' },
      })
    ).json().id
  }

  async open(): Promise<string> {
    return (await createOutcome(this.app, this.admin, this.outcomeBody())).outcome_id
  }

  async interpreted(): Promise<string> {
    const id = await this.open()
    await interpret(this.app, this.admin, id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    return id
  }

  async decided() {
    const outcomeId = await this.interpreted()
    const envelope = await evaluate(this.app, this.admin, outcomeId)
    return { outcomeId, manifestId: envelope.manifest.manifest_id as string }
  }

  /** A fresh do_and_judge review of orch-a, which the orchestrator key speaks for. */
  async review(): Promise<string> {
    return (await createReview(this.app, this.admin, 'do_and_judge')).review_id
  }

  /** A fresh review whose judge BLOCKED it: it takes one revision. */
  async reviewToRevise(): Promise<string> {
    const id = await this.review()
    await judge(this.app, this.admin, id, verdict('solo', 'BLOCKED'))
    assert.equal((await decide(this.app, this.admin, id)).manifest.directive, 'REVISE')
    return id
  }

  async halted(): Promise<string> {
    const id = await this.open()
    await interpret(this.app, this.admin, id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    await interpret(this.app, this.admin, id, {
      orchestrator_id: 'orch-b',
      outcome_interpretation: 'failure',
      success_criterion: { other: true },
    })
    const envelope = await evaluate(this.app, this.admin, id)
    assert.equal(envelope.manifest.directive, 'HALT')
    return id
  }
}
