import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  type Delivery,
  disabledText,
  filterText,
  lastAttemptText,
  replaceDelivery,
  type Webhook,
} from '../../console/src/webhook-shapes.ts'

const delivery = (n: number, change: Partial<Delivery> = {}): Delivery => ({
  delivery_id: `d${n}`,
  event_id: `e${n}`,
  type: 'manifest.issued',
  status: 'pending',
  attempts: 0,
  next_attempt_at: '2026-12-06T12:00:05Z',
  last_status_code: null,
  last_error: null,
  last_attempt_at: null,
  created_at: '2026-12-06T12:00:00Z',
  ...change,
})

const webhook: Webhook = {
  webhook_id: 'w1',
  url: 'https://receiver.example/hook',
  events: ['manifest.issued'],
  filter: { kind: null, subagent_id: null, verdict: null, directive: null, orchestrator_id: null },
  description: null,
  created_at: '2026-12-06T12:00:00Z',
  disabled_at: null,
  disabled_reason: null,
}

describe("the webhooks screen's wording", () => {
  it('names only the filter members that are set', () => {
    assert.equal(filterText(webhook.filter), null)
    assert.equal(filterText(null), null)
    assert.equal(
      filterText({ ...webhook.filter, orchestrator_id: 'planner', verdict: 'AGREED' }),
      'verdict = AGREED, orchestrator_id = planner',
    )
  })

  it('says why a webhook stopped, and nothing for an enabled one', () => {
    assert.equal(disabledText(webhook), null)
    const at = '2026-12-06T13:00:00Z'
    assert.equal(
      disabledText({ ...webhook, disabled_at: at, disabled_reason: 'gone' }),
      'the receiver answered 410 Gone',
    )
    assert.equal(
      disabledText({ ...webhook, disabled_at: at, disabled_reason: 'failing' }),
      'every delivery failed for too long',
    )
    assert.equal(
      disabledText({ ...webhook, disabled_at: at, disabled_reason: 'disabled_by_admin' }),
      'disabled by an admin',
    )
  })

  it("describes the last attempt's answer or error", () => {
    assert.equal(lastAttemptText(delivery(1)), 'not attempted yet')
    assert.equal(lastAttemptText(delivery(1, { attempts: 1, last_status_code: 503 })), 'HTTP 503')
    assert.equal(
      lastAttemptText(delivery(1, { attempts: 1, last_status_code: 503, last_error: 'HTTP 503' })),
      'HTTP 503',
    )
    assert.equal(
      lastAttemptText(delivery(1, { attempts: 2, last_error: 'connect ECONNREFUSED 127.0.0.1:9' })),
      'connect ECONNREFUSED 127.0.0.1:9',
    )
    assert.equal(
      lastAttemptText(delivery(1, { attempts: 2, last_status_code: 500, last_error: 'body cut off' })),
      'HTTP 500: body cut off',
    )
  })
})

describe('recent deliveries', () => {
  const newestFirst = [5, 4, 3, 2, 1].map((n) => delivery(n))

  it('replaces a redelivered row in place and puts a new one (a test event) on top', () => {
    const rows = newestFirst
    const redelivered = replaceDelivery(rows, delivery(3, { status: 'pending', attempts: 4 }))
    assert.deepEqual(
      redelivered.map((d) => [d.delivery_id, d.attempts]),
      [
        ['d5', 0],
        ['d4', 0],
        ['d3', 4],
        ['d2', 0],
        ['d1', 0],
      ],
    )
    assert.equal(replaceDelivery(rows, delivery(9))[0]?.delivery_id, 'd9')
  })
})
