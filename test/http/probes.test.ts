import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { buildTestApp } from '../helpers/app.ts'
import { clientHash, createOutcome, disputedOutcome, evaluate, interpret } from '../helpers/fixtures.ts'
import { json, startTarget } from '../helpers/http-target.ts'

const SECRET = `ledger-token-${Math.random().toString(36).slice(2)}`

function probeBody(url: string, extra: Record<string, unknown> = {}) {
  return {
    name: 'ledger-refund-settled',
    request: {
      method: 'GET',
      url: `${url}/refunds/{{params.refund_id}}?run={{outcome.run_id}}`,
      headers: { authorization: { env: 'LEDGER_TOKEN' } },
    },
    retries: 1,
    predicate: {
      status: 200,
      pointer: '/state',
      map: { settled: 'success', pending: 'partial', reversed: 'failure' },
    },
    ...extra,
  }
}

describe('ground-truth probes', () => {
  it('registers with defaults and a digest, versions on PUT, and never returns env secrets', async (t) => {
    const app = await buildTestApp(t, { config: { probeEnv: { LEDGER_TOKEN: SECRET } } })
    const created = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/probes',
      payload: probeBody('http://ledger.test'),
    })
    assert.equal(created.statusCode, 201, created.body)
    const probe = created.json()
    assert.equal(probe.version, 1)
    assert.equal(probe.definition.timeout_ms, 2000)
    assert.equal(probe.definition.retries, 1)
    assert.equal(probe.definition.request.method, 'GET')
    assert.equal(probe.probe_digest, clientHash(probe.definition))
    assert.deepEqual(probe.definition.request.headers, { authorization: { env: 'LEDGER_TOKEN' } })
    const replaced = await app.request(app.adminKey, {
      method: 'PUT',
      url: `/v1/probes/${probe.probe_id}`,
      payload: probeBody('http://ledger.test', { timeout_ms: 500 }),
    })
    assert.equal(replaced.statusCode, 200)
    assert.equal(replaced.json().version, 2)
    assert.notEqual(replaced.json().probe_digest, probe.probe_digest)
    const audited = async (kind: string) => {
      const response = await app.request(app.adminKey, {
        method: 'GET',
        url: `/v1/audit/records?kind=${kind}`,
      })
      assert.equal(response.statusCode, 200, response.body)
      return response
        .json()
        .items.map((r: { data: { probe_id: string; version: number } }) => [r.data.probe_id, r.data.version])
    }
    assert.deepEqual(await audited('probe.registered'), [[probe.probe_id, 1]], 'POST registers')
    assert.deepEqual(await audited('probe.updated'), [[probe.probe_id, 2]], 'PUT updates')
    const listed = (await app.request(app.adminKey, { method: 'GET', url: '/v1/probes' })).json()
    assert.equal(listed.items.length, 1)
    const bodies = [created.body, replaced.body, JSON.stringify(listed)]
    for (const body of bodies) assert.ok(!body.includes(SECRET))
    const bad = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/probes',
      payload: probeBody('http://ledger.test', { request: { url: 'http://x/{{env.HOME}}' } }),
    })
    assert.equal(bad.statusCode, 400)
  })

  it('refuses a non-public IP literal at registration unless private addresses are allowed', async (t) => {
    const app = await buildTestApp(t, { config: { probeAllowPrivate: false } })
    for (const host of [
      '127.0.0.1',
      '127.1',
      '2130706433',
      '[::ffff:127.0.0.1]',
      '169.254.169.254',
      '10.0.0.1',
      '[::1]',
    ]) {
      const response = await app.request(app.adminKey, {
        method: 'POST',
        url: '/v1/probes',
        payload: probeBody(`http://${host}`),
      })
      assert.equal(response.statusCode, 400, `${host}: ${response.body}`)
      assert.equal(response.json().errors[0].path, 'body/request/url')
    }
    const named = await app.request(app.adminKey, {
      method: 'POST',
      url: '/v1/probes',
      payload: probeBody('https://ledger.example.com'),
    })
    assert.equal(named.statusCode, 201, 'names are checked at execution, not registration')
  })

  it('settles a disagreement by ground truth, records the execution, and sends the env header', async (t) => {
    const target = await startTarget(t, (req, res, n) => {
      // First attempt fails with 503: the probe retries once.
      if (n === 1) return json(res, 503, { error: 'busy' })
      json(res, 200, { state: 'reversed', id: req.url })
    })
    const app = await buildTestApp(t, { config: { probeEnv: { LEDGER_TOKEN: SECRET } } })
    const probe = (
      await app.request(app.adminKey, { method: 'POST', url: '/v1/probes', payload: probeBody(target.url) })
    ).json()
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const outcome = await disputedOutcome(app, a, b, {
      outcome: {
        arbiter_orchestrator_id: 'orch-a',
        probe: { probe_id: probe.probe_id, params: { refund_id: 're 1/x' } },
      },
      orchA: { outcome_interpretation: 'success' },
      orchB: { outcome_interpretation: 'partial' },
    })
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        app.request(a, { method: 'POST', url: `/v1/outcomes/${outcome.outcome_id}/evaluate` }),
      ),
    )
    assert.ok(
      responses.every((r) => r.statusCode === 200),
      responses.map((r) => r.statusCode).join(','),
    )
    assert.equal(new Set(responses.map((r) => r.json().manifest.manifest_id)).size, 1)
    assert.equal(target.requests.length, 2, 'one execution (two attempts) for 20 concurrent evaluate calls')
    assert.equal(target.requests[1]!.headers.authorization, SECRET)
    assert.match(target.requests[1]!.url, /^\/refunds\/re%201%2Fx\?run=/)

    const m = responses[0]!.json().manifest
    assert.equal(m.verdict, 'GROUND_TRUTH_RESOLVES', 'ground truth overrides the designated arbiter')
    assert.equal(m.resolved_outcome, 'failure')
    assert.equal(m.action_owner, 'orch-a')
    const gt = m.ground_truth_arbiter_predicate
    assert.equal(gt.probe_id, probe.probe_id)
    assert.equal(gt.probe_version, 1)
    assert.equal(gt.probe_digest, probe.probe_digest)
    assert.equal(gt.attempts, 2)
    assert.equal(gt.http_status, 200)
    assert.equal(gt.result, 'failure')
    assert.equal(gt.error, null)
    assert.match(gt.response_digest, /^sha256:[0-9a-f]{64}$/)
    assert.equal(gt.request.method, 'GET')
    for (const r of responses) assert.ok(!r.body.includes(SECRET))

    const ops = await app.key('ops')
    const records = (
      await app.request(ops, {
        method: 'GET',
        url: `/v1/audit/records?outcome_id=${outcome.outcome_id}&kind=probe.executed`,
      })
    ).json().items
    assert.equal(records.length, 1)
    assert.equal(records[0].data.http_status, 200)
    assert.ok(!JSON.stringify(records).includes(SECRET))
    const metrics = (await app.request(null, { method: 'GET', url: '/metrics' })).body
    assert.match(
      metrics,
      new RegExp(`arbiter_probe_duration_seconds_count\\{probe_id="${probe.probe_id}"\\} 1`),
    )
  })

  it('falls through to the next rule on a probe error and records it in the manifest', async (t) => {
    const target = await startTarget(t, (_req, res) => json(res, 200, { state: 'unknown-state' }))
    const app = await buildTestApp(t)
    const probe = (
      await app.request(app.adminKey, {
        method: 'POST',
        url: '/v1/probes',
        payload: probeBody(target.url, { request: { url: `${target.url}/x` } }),
      })
    ).json()
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const outcome = await disputedOutcome(app, a, b, {
      outcome: { arbiter_orchestrator_id: 'orch-b', probe: { probe_id: probe.probe_id } },
      orchA: { outcome_interpretation: 'success' },
      orchB: { outcome_interpretation: 'failure' },
    })
    const { manifest } = await evaluate(app, a, outcome.outcome_id)
    assert.equal(manifest.verdict, 'ARBITER_DECIDES')
    assert.equal(manifest.ground_truth_arbiter_predicate.error.code, 'unmapped_value')
    assert.equal(manifest.ground_truth_arbiter_predicate.result, null)
    const metrics = (await app.request(null, { method: 'GET', url: '/metrics' })).body
    assert.match(metrics, /arbiter_probe_errors_total\{probe_id="[^"]+",reason="unmapped_value"\} 1/)
  })

  it('does not hold a database connection while a slow probe runs', async (t) => {
    const target = await startTarget(t, (_req, res) => {
      setTimeout(() => json(res, 200, { state: 'settled' }), 1500)
    })
    const app = await buildTestApp(t)
    const probe = (
      await app.request(app.adminKey, {
        method: 'POST',
        url: '/v1/probes',
        payload: probeBody(target.url, {
          request: { url: `${target.url}/slow` },
          timeout_ms: 5000,
          retries: 0,
        }),
      })
    ).json()
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const outcome = await createOutcome(app, a, { probe: { probe_id: probe.probe_id } })
    await interpret(app, a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    await interpret(app, b, outcome.outcome_id, {
      orchestrator_id: 'orch-b',
      outcome_interpretation: 'failure',
    })
    const evaluation = app.request(a, { method: 'POST', url: `/v1/outcomes/${outcome.outcome_id}/evaluate` })
    await sleep(300)
    // While the probe is in flight, other requests are served promptly, even on a one-connection pool.
    const started = performance.now()
    const other = await app.request(a, { method: 'GET', url: `/v1/outcomes/${outcome.outcome_id}` })
    assert.equal(other.statusCode, 200)
    assert.ok(performance.now() - started < 1000, 'a read was not stuck behind the probe')
    const done = await evaluation
    assert.equal(done.json().manifest.verdict, 'GROUND_TRUTH_RESOLVES')
    assert.equal(done.json().manifest.resolved_outcome, 'success')
  })

  it('dry-runs without touching any outcome; errors are a 200 with error set', async (t) => {
    const target = await startTarget(t, (_req, res) => json(res, 200, { state: 'pending' }))
    const app = await buildTestApp(t, { config: { probeEnv: { LEDGER_TOKEN: SECRET } } })
    const probe = (
      await app.request(app.adminKey, { method: 'POST', url: '/v1/probes', payload: probeBody(target.url) })
    ).json()
    const ok = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/probes/${probe.probe_id}/dry-run`,
      payload: { params: { refund_id: 're_9' }, outcome: { subagent_id: 's', run_id: 'r' } },
    })
    assert.equal(ok.statusCode, 200, ok.body)
    assert.equal(ok.json().result, 'partial', ok.body)
    assert.match(ok.json().request.url, /\/refunds\/re_9\?run=r$/)
    const missing = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/probes/${probe.probe_id}/dry-run`,
      payload: {},
    })
    assert.equal(missing.statusCode, 200)
    assert.equal(missing.json().error.code, 'param_missing')
    const noOutcome = await app.request(app.adminKey, {
      method: 'POST',
      url: `/v1/probes/${probe.probe_id}/dry-run`,
      payload: { params: { refund_id: 're_9' } },
    })
    assert.equal(noOutcome.json().error.code, 'param_missing')
    assert.match(noOutcome.json().error.detail, /outcome\.run_id/)
    assert.equal(target.requests.length, 1)
    const { rows } = await app.app.db.query('SELECT count(*)::int AS n FROM outcomes')
    assert.equal(rows[0].n, 0)
  })
})

describe('probe responses that quote awkward text', () => {
  it('still records and decides when a quoted value is cut inside a surrogate pair', async (t) => {
    // 63 ASCII characters then an emoji: a naive 64-unit cut would leave half of it (a lone surrogate).
    const value = `${'x'.repeat(62)}\u{1F600}${'y'.repeat(10)}`
    const target = await startTarget(t, (_req, res) => json(res, 200, { state: value }))
    const app = await buildTestApp(t)
    const probe = (
      await app.request(app.adminKey, {
        method: 'POST',
        url: '/v1/probes',
        payload: {
          name: 'p',
          request: { url: `${target.url}/x` },
          predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
        },
      })
    ).json()
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const outcome = await disputedOutcome(app, a, b, {
      outcome: { fallback_policy: 'strictest_wins', probe: { probe_id: probe.probe_id } },
      orchA: { outcome_interpretation: 'success' },
      orchB: { outcome_interpretation: 'failure' },
    })
    const { manifest } = await evaluate(app, a, outcome.outcome_id)
    assert.equal(manifest.verdict, 'POLICY_RESOLVES')
    assert.equal(manifest.ground_truth_arbiter_predicate.error.code, 'unmapped_value')
    assert.doesNotMatch(
      manifest.ground_truth_arbiter_predicate.error.detail,
      /[\uD800-\uDBFF](?![\uDC00-\uDFFF])/,
    )
  })
})
