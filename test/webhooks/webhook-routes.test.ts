import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { verifyWebhook } from '@arbiter/client'
import { Webhook } from 'standardwebhooks'
import type { z } from 'zod'
import { CASE_KIND_MODULES } from '../../src/cases/registry.ts'
import { webhookEventsOf } from '../../src/http/routes/webhooks.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createOutcome, evaluate, haltedOutcome, interpret } from '../helpers/fixtures.ts'
import { WebhookReceiver } from '../helpers/webhook-receiver.ts'

const FAST = { allowPrivate: true, pollMs: 20, retryScheduleMs: [50, 100, 200] }

async function register(t: TestApp, body: Record<string, unknown>) {
  const response = await t.request(t.adminKey, { method: 'POST', url: '/v1/webhooks', payload: body })
  assert.equal(response.statusCode, 201, response.body)
  return response.json() as { webhook_id: string; secret: string; [k: string]: unknown }
}

/** The event bodies as the OpenAPI document's `webhooks` section describes them. */
const documented = webhookEventsOf(CASE_KIND_MODULES)

/** A body is exactly what its schema describes: it parses, and nothing it holds is left out of the schema. */
function assertDocumented(schema: z.ZodType, body: string) {
  const sent = JSON.parse(body)
  const parsed = schema.safeParse(sent)
  assert.ok(parsed.success, parsed.error?.message)
  assert.deepEqual(parsed.data, sent)
}

async function auditKinds(t: TestApp): Promise<string[]> {
  const response = await t.request(t.adminKey, { method: 'GET', url: '/v1/audit/records?limit=500' })
  assert.equal(response.statusCode, 200, response.body)
  return (response.json().items as { kind: string }[]).map((record) => record.kind)
}

describe('POST/GET/PATCH/DELETE /v1/webhooks', () => {
  it('registers a webhook, shows its secret once, lists, changes and deletes it, each change audited', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: FAST } })
    const created = await register(app, {
      url: 'https://hooks.example.com/arbiter',
      events: ['manifest.issued'],
      filter: { orchestrator_id: 'orch-a' },
      description: 'planner',
    })
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
    assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32)
    assert.deepEqual(created.filter, {
      kind: null,
      subagent_id: null,
      verdict: null,
      directive: null,
      orchestrator_id: 'orch-a',
    })
    assert.equal(created.disabled_at, null)
    const one = await app.request(app.adminKey, { method: 'GET', url: `/v1/webhooks/${created.webhook_id}` })
    assert.equal(one.statusCode, 200)
    assert.equal('secret' in one.json(), false)
    const list = await app.request(app.adminKey, { method: 'GET', url: '/v1/webhooks' })
    assert.deepEqual(
      list.json().items.map((w: { webhook_id: string }) => w.webhook_id),
      [created.webhook_id],
    )
    const disabled = await app.request(app.adminKey, {
      method: 'PATCH',
      url: `/v1/webhooks/${created.webhook_id}`,
      payload: { disabled: true, description: 'paused' },
    })
    assert.equal(disabled.statusCode, 200, disabled.body)
    assert.notEqual(disabled.json().disabled_at, null)
    assert.equal(disabled.json().disabled_reason, 'disabled_by_admin')
    const enabled = await app.request(app.adminKey, {
      method: 'PATCH',
      url: `/v1/webhooks/${created.webhook_id}`,
      payload: { disabled: false },
    })
    assert.equal(enabled.json().disabled_at, null)
    assert.equal(enabled.json().description, 'paused')
    const rotated = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/webhooks/${created.webhook_id}/rotate-secret`,
    })
    assert.equal(rotated.statusCode, 200, rotated.body)
    assert.notEqual(rotated.json().secret, created.secret)
    const removed = await app.request(app.adminKey, {
      method: 'DELETE',
      url: `/v1/webhooks/${created.webhook_id}`,
    })
    assert.equal(removed.statusCode, 204)
    const gone = await app.request(app.adminKey, { method: 'GET', url: `/v1/webhooks/${created.webhook_id}` })
    assert.equal(gone.statusCode, 404)
    const kinds = (await auditKinds(app)).filter((kind) => kind.startsWith('webhook.'))
    assert.deepEqual(kinds, [
      'webhook.created',
      'webhook.updated',
      'webhook.disabled',
      'webhook.updated',
      'webhook.secret_rotated',
      'webhook.deleted',
    ])
  })

  it('refuses bad bodies with 400, other roles with 403, unknown ids with 404', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: { pollMs: 20 } } })
    const bad = [
      { url: 'https://a.example.com', events: [] },
      { url: 'https://a.example.com', events: ['manifest.made'] },
      { url: 'ftp://a.example.com', events: ['manifest.issued'] },
      { url: 'not a url', events: ['manifest.issued'] },
      { url: 'http://127.0.0.1:9/hook', events: ['manifest.issued'] },
      { url: 'http://localhost/hook', events: ['manifest.issued'] },
      { url: 'https://u:p@a.example.com', events: ['manifest.issued'] },
      { url: 'https://a.example.com', events: ['manifest.issued'], extra: 1 },
      { url: 'https://a.example.com', events: ['manifest.issued'], filter: { verdict: 'MAYBE' } },
    ]
    for (const payload of bad) {
      const response = await app.request(app.adminKey, { method: 'POST', url: '/v1/webhooks', payload })
      assert.equal(response.statusCode, 400, `${JSON.stringify(payload)} → ${response.body}`)
      assert.equal(response.headers['content-type'], 'application/problem+json; charset=utf-8')
    }
    const private_ = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'http://10.0.0.1/hook', events: ['manifest.issued'] },
    })
    assert.match(private_.json().detail, /ARBITER_WEBHOOK_ALLOW_PRIVATE/)
    const ops = await app.key('ops')
    const forbidden = await app.request(ops, { method: 'GET', url: '/v1/webhooks' })
    assert.equal(forbidden.statusCode, 403)
    const unknown = '00000000-0000-4000-8000-000000000000'
    for (const [method, url] of [
      ['GET', `/v1/webhooks/${unknown}`],
      ['DELETE', `/v1/webhooks/${unknown}`],
      ['GET', `/v1/webhooks/${unknown}/deliveries`],
      ['POST', `/v1/webhooks/${unknown}/test`],
      ['POST', `/v1/webhooks/${unknown}/rotate-secret`],
      ['POST', `/v1/webhooks/${unknown}/deliveries/${unknown}/redeliver`],
    ] as const) {
      const response = await app.request(app.adminKey, { method, url })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
    }
    const patch = await app.request(app.adminKey, {
      method: 'PATCH',
      url: `/v1/webhooks/${unknown}`,
      payload: { nonsense: true },
    })
    assert.equal(patch.statusCode, 404)
  })
})

describe('delivery of decisions', () => {
  it('delivers a manifest.issued event that standardwebhooks verifies, once, with the envelope as data', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, { config: { webhooks: FAST } })
    const hook = await register(app, { url: receiver.url, events: ['manifest.issued'] })
    const a = await app.key('orchestrator', ['orch-a'])
    const outcome = await createOutcome(app, a, { expected_orchestrators: ['orch-a'] })
    await interpret(app, a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    const envelope = await evaluate(app, a, outcome.outcome_id)
    await receiver.until((requests) => requests.length >= 1)
    const [request] = receiver.requests
    const verified = new Webhook(hook.secret).verify(request!.body, {
      'webhook-id': request!.id,
      'webhook-timestamp': request!.timestamp,
      'webhook-signature': request!.signature,
    }) as { type: string; timestamp: string; data: { manifest: { manifest_id: string } } }
    assert.equal(verified.type, 'manifest.issued')
    assertDocumented(documented.manifestIssued, request!.body)
    assert.equal(verified.data.manifest.manifest_id, envelope.manifest.manifest_id)
    assert.deepEqual(verified.data.manifest, envelope.manifest)
    assert.equal(request!.headers['content-type'], 'application/json')
    // Tampered body, timestamp and signature all fail.
    const headers = {
      'webhook-id': request!.id,
      'webhook-timestamp': request!.timestamp,
      'webhook-signature': request!.signature,
    }
    const verifier = new Webhook(hook.secret)
    assert.throws(() => verifier.verify(request!.body.replace('manifest.issued', 'manifest.issueD'), headers))
    assert.throws(() =>
      verifier.verify(request!.body, {
        ...headers,
        'webhook-timestamp': String(Number(request!.timestamp) + 1),
      }),
    )
    assert.throws(() =>
      verifier.verify(request!.body, {
        ...headers,
        'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
      }),
    )
    // The receiver has the request before Arbiter has recorded its answer: wait for the record.
    let items: { event_id: string; attempts: number; last_status_code: number; next_attempt_at: null }[] = []
    while (items.length === 0) {
      const deliveries = await app.request(app.adminKey, {
        method: 'GET',
        url: `/v1/webhooks/${hook.webhook_id}/deliveries?status=succeeded`,
      })
      items = deliveries.json().items
      if (items.length === 0) await new Promise((resolve) => setTimeout(resolve, 25))
    }
    assert.equal(items.length, 1)
    assert.equal(items[0]!.event_id, request!.id)
    assert.equal(items[0]!.attempts, 1)
    assert.equal(items[0]!.last_status_code, 204)
    assert.equal(items[0]!.next_attempt_at, null)
    assert.equal(receiver.requests.length, 1)
  })

  it('signs with both secrets after a rotation, and sends test events to that webhook alone', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, { config: { webhooks: FAST } })
    const hook = await register(app, { url: receiver.url, events: ['escalation.opened'] })
    const other = await register(app, {
      url: receiver.url.replace('/hook', '/other'),
      events: ['escalation.opened'],
    })
    const rotated = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/webhooks/${hook.webhook_id}/rotate-secret`,
    })
    const test = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/webhooks/${hook.webhook_id}/test`,
    })
    assert.equal(test.statusCode, 202, test.body)
    await receiver.until((requests) => requests.length >= 1)
    const request = receiver.requests[0]!
    assert.equal(request.signature.split(' ').length, 2)
    const headers = {
      'webhook-id': request.id,
      'webhook-timestamp': request.timestamp,
      'webhook-signature': request.signature,
    }
    const newSecret: string = rotated.json().secret
    assert.notEqual(newSecret, hook.secret)
    for (const secret of [hook.secret, newSecret]) {
      const body = new Webhook(secret).verify(request.body, headers) as { type: string; data: unknown }
      assert.equal(body.type, 'webhook.test')
      assert.deepEqual(body.data, { webhook_id: hook.webhook_id })
      assertDocumented(documented.testEvent, request.body)
      const event = verifyWebhook(request.headers, request.body, secret)
      assert.equal(event.type, 'webhook.test')
      assert.deepEqual(event.data, { webhook_id: hook.webhook_id })
    }
    assert.throws(() => new Webhook(other.secret).verify(request.body, headers))
    assert.throws(() => verifyWebhook(request.headers, request.body, other.secret), /signature/)
    assert.equal(receiver.requests.length, 1)
  })

  it('sends escalation.opened with the escalation as listed and its envelope', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    const app = await buildTestApp(t, { config: { webhooks: FAST } })
    await register(app, { url: receiver.url, events: ['escalation.opened', 'escalation.resolved'] })
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const { outcome, envelope } = await haltedOutcome(app, a, b)
    await receiver.until((requests) => requests.length >= 1)
    const ops = await app.key('ops')
    const listed = (await app.request(ops, { method: 'GET', url: '/v1/escalations' })).json().items[0]
    const opened = JSON.parse(receiver.requests[0]!.body)
    assert.equal(opened.type, 'escalation.opened')
    assertDocumented(documented.escalationEvent, receiver.requests[0]!.body)
    const { envelope: haltEnvelope, ...escalation } = opened.data
    assert.deepEqual(escalation, listed)
    assert.deepEqual(haltEnvelope.manifest, envelope.manifest)
    const resolution = await app.request(ops, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/resolution`,
      payload: { outcome: 'success', rationale: 'checked by hand' },
    })
    assert.equal(resolution.statusCode, 201, resolution.body)
    await receiver.until((requests) => requests.length >= 2)
    const resolved = JSON.parse(receiver.requests[1]!.body)
    assert.equal(resolved.type, 'escalation.resolved')
    assertDocumented(documented.escalationEvent, receiver.requests[1]!.body)
    assert.equal(resolved.data.status, 'resolved')
    assert.equal(resolved.data.manifest_id, envelope.manifest.manifest_id)
  })
})

describe('GET /v1/webhooks/{id}/deliveries', () => {
  it('lists the newest delivery first, and its cursor continues to older ones', async (t) => {
    const app = await buildTestApp(t, { config: { webhooks: FAST } })
    const hook = await register(app, {
      url: 'https://hooks.example.com/arbiter',
      events: ['manifest.issued'],
    })
    const sent: string[] = []
    for (let i = 0; i < 5; i++) {
      const test = await app.request(app.adminKey, {
        method: 'POST',
        url: `/v1/webhooks/${hook.webhook_id}/test`,
      })
      assert.equal(test.statusCode, 202, test.body)
      sent.push(test.json().delivery_id)
    }
    const listed: string[][] = []
    let url = `/v1/webhooks/${hook.webhook_id}/deliveries?limit=2`
    for (;;) {
      const response = await app.request(app.adminKey, { method: 'GET', url })
      assert.equal(response.statusCode, 200, response.body)
      const page = response.json() as { items: { delivery_id: string }[]; next_cursor: string | null }
      listed.push(page.items.map((d) => d.delivery_id))
      if (page.next_cursor === null) break
      url = `/v1/webhooks/${hook.webhook_id}/deliveries?limit=2&cursor=${encodeURIComponent(page.next_cursor)}`
    }
    const newestFirst = [...sent].reverse()
    assert.deepEqual(listed, [newestFirst.slice(0, 2), newestFirst.slice(2, 4), newestFirst.slice(4)])
  })
})

describe('GET /metrics', () => {
  it('shows pending deliveries and the oldest pending age while a receiver is down, and attempts by result', async (t) => {
    const receiver = await WebhookReceiver.start()
    t.after(() => receiver.close())
    await receiver.refuse()
    const app = await buildTestApp(t, { config: { webhooks: { ...FAST, retryScheduleMs: [60_000] } } })
    const hook = await register(app, { url: receiver.url, events: ['manifest.issued'] })
    const test = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/webhooks/${hook.webhook_id}/test`,
    })
    assert.equal(test.statusCode, 202)
    let text = ''
    while (!/arbiter_webhook_attempts_total\{result="network_error"\} 1/.test(text)) {
      text = (await app.request(null, { method: 'GET', url: '/metrics' })).body
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    assert.match(text, /^arbiter_webhook_deliveries_pending 1$/m)
    const age = Number(/^arbiter_webhook_oldest_pending_age_seconds (\S+)$/m.exec(text)?.[1])
    assert.ok(age > 0, `oldest pending age ${age}`)
    assert.match(text, /^arbiter_webhook_attempt_duration_seconds_count 1$/m)
  })
})
