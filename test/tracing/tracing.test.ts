import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type TestContext, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createTestDatabase } from '../helpers/database.ts'
import { CRITERION } from '../helpers/fixtures.ts'
import { httpClient } from '../helpers/http-client.ts'
import { json, startTarget } from '../helpers/http-target.ts'
import { type ReceivedSpan, startOtlpReceiver } from '../helpers/otlp-receiver.ts'
import { builtEntry, startService } from '../helpers/process.ts'

// Runs the built service (dist/): `npm run build` first.

const RECORDER = fileURLToPath(new URL('./fixtures/record-modules.mjs', import.meta.url))
const PROBE_SECRET = `probe-secret-${randomBytes(8).toString('hex')}`
const EVIDENCE_TEXT = `evidence-text-${randomBytes(8).toString('hex')}`

/**
 * The service as a process on the test database (a server database when TEST_DATABASE_URL is set, else its
 * embedded one in a fresh data dir), with the module recorder preloaded and `env` added.
 */
async function startTracedService(
  t: TestContext,
  env: Record<string, string>,
  command: string[] = [builtEntry('server')],
) {
  const dataDir = await mkdtemp(join(tmpdir(), 'arbiter-tracing-'))
  const db = process.env.TEST_DATABASE_URL ? await createTestDatabase() : undefined
  const modulesFile = join(dataDir, 'modules.txt')
  const admin = randomBytes(30).toString('base64url').slice(0, 40)
  const service = await startService(
    {
      ARBITER_DATA_DIR: dataDir,
      ...(db ? { DATABASE_URL: db.connectionString } : {}),
      ARBITER_BOOTSTRAP_ADMIN_KEY: admin,
      ARBITER_PROBE_ALLOW_PRIVATE: 'true',
      ARBITER_RATE_LIMIT_PER_MINUTE: '0',
      PROBE_TOKEN: PROBE_SECRET,
      RECORD_MODULES_FILE: modulesFile,
      ...env,
    },
    60_000,
    ['--import', RECORDER],
    command,
  )
  const http = httpClient(service.baseUrl)
  t.after(async () => {
    await service.stop()
    await http.close()
    await db?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })
  return {
    service,
    http,
    admin,
    /** Every module the process loaded, once it has exited. */
    modules: async () => {
      await service.stop()
      return (await readFile(modulesFile, 'utf8')).split('\n')
    },
  }
}

/** Keys, a probe that sends PROBE_TOKEN, and an outcome two orchestrators read apart: its evaluation probes. */
async function decideFlow(
  run: Awaited<ReturnType<typeof startTracedService>>,
  probeUrl: string,
  traceparent: string | undefined,
) {
  const { http, admin } = run
  const headers: Record<string, string> = traceparent ? { traceparent, tracestate: 'caller=1' } : {}
  const call = async (method: string, path: string, key: string, body: unknown, status: number) => {
    const answer = await http.call(method, path, key, body, headers)
    assert.equal(answer.status, status, answer.text)
    return answer.json
  }
  const keyA = (
    await call(
      'POST',
      '/v1/admin/keys',
      admin,
      { role: 'orchestrator', orchestrator_ids: ['orch-a'], label: 'a' },
      201,
    )
  ).key as string
  const keyB = (
    await call(
      'POST',
      '/v1/admin/keys',
      admin,
      { role: 'orchestrator', orchestrator_ids: ['orch-b'], label: 'b' },
      201,
    )
  ).key as string
  const probe = await call(
    'POST',
    '/v1/probes',
    admin,
    {
      name: `ledger-${randomBytes(3).toString('hex')}`,
      request: { url: `${probeUrl}/{{outcome.run_id}}`, headers: { 'x-token': { env: 'PROBE_TOKEN' } } },
      timeout_ms: 2_000,
      predicate: { status: 200, pointer: '/state', map: { settled: 'success' } },
    },
    201,
  )
  const outcome = await call(
    'POST',
    '/v1/outcomes',
    keyA,
    {
      subagent_id: 'refund-agent',
      run_id: `run-${randomBytes(4).toString('hex')}`,
      evidence: [{ kind: 'log', content: EVIDENCE_TEXT }],
      probe: { probe_id: probe.probe_id },
    },
    201,
  )
  const base = `/v1/outcomes/${outcome.outcome_id}`
  for (const [key, orchestrator, reading] of [
    [keyA, 'orch-a', 'failure'],
    [keyB, 'orch-b', 'success'],
  ] as const) {
    await call(
      'POST',
      `${base}/interpretations`,
      key,
      {
        orchestrator_id: orchestrator,
        outcome_interpretation: reading,
        success_criterion: CRITERION,
        rationale: EVIDENCE_TEXT,
      },
      201,
    )
  }
  const envelope = await call('POST', `${base}/evaluate`, keyA, undefined, 200)
  return { outcomeId: outcome.outcome_id as string, manifest: envelope.manifest }
}

const named = (spans: ReceivedSpan[], name: string) => spans.filter((span) => span.name === name)

test('a decide flow sent with a traceparent is one trace: HTTP, SQL, decision, signing, probe, batch', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const traceId = randomBytes(16).toString('hex')
  const callerSpanId = randomBytes(8).toString('hex')
  const traceparent = `00-${traceId}-${callerSpanId}-01`
  const target = await startTarget(t, (req, res) =>
    req.url?.includes('missing') ? json(res, 404, {}) : json(res, 200, { state: 'settled' }),
  )
  const run = await startTracedService(t, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  })
  const { outcomeId, manifest } = await decideFlow(run, `${target.url}/refunds`, traceparent)
  assert.equal(manifest.verdict, 'GROUND_TRUTH_RESOLVES')

  // The probe target was called within the caller's trace.
  assert.equal(target.requests.length, 1)
  const sent = String(target.requests[0]!.headers.traceparent)
  assert.match(sent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
  assert.equal(target.requests[0]!.headers.tracestate, 'caller=1')

  await receiver.waitFor(
    (spans) =>
      named(spans, 'POST /v1/outcomes/:id/evaluate').length > 0 &&
      named(spans, 'arbiter.decide').length > 0 &&
      named(spans, 'arbiter.sequencer.batch').some(
        (span) => Number(span.attributes['arbiter.batch.size']) > 0,
      ),
  )
  const ours = receiver.spans.filter((span) => span.traceId === traceId)

  const evaluate = ours.find((span) => span.name === 'POST /v1/outcomes/:id/evaluate')
  assert.ok(evaluate, `no server span; got ${ours.map((s) => s.name).join(', ')}`)
  assert.equal(evaluate.kind, 2)
  assert.equal(evaluate.parentSpanId, callerSpanId)
  assert.equal(evaluate.attributes['http.route'], '/v1/outcomes/:id/evaluate')
  assert.equal(evaluate.attributes['http.response.status_code'], 200)
  assert.equal(evaluate.attributes['http.request.method'], 'POST')
  // The raw path (with the outcome's id) only where the conventions put it, never in the span's name.
  assert.ok(!evaluate.name.includes(outcomeId))

  const decide = named(ours, 'arbiter.decide')
  assert.equal(decide.length, 1)
  assert.deepEqual(
    {
      kind: decide[0]!.attributes['arbiter.case.kind'],
      id: decide[0]!.attributes['arbiter.case.id'],
      verdict: decide[0]!.attributes['arbiter.verdict'],
      directive: decide[0]!.attributes['arbiter.directive'],
    },
    { kind: 'outcome', id: outcomeId, verdict: manifest.verdict, directive: manifest.directive },
  )
  assert.equal(decide[0]!.parentSpanId, evaluate.spanId)

  const sign = named(ours, 'arbiter.sign')
  assert.ok(sign.length >= 1)
  assert.equal(sign[0]!.attributes['arbiter.manifest.id'], manifest.manifest_id)

  const probe = named(ours, 'arbiter.probe')
  assert.equal(probe.length, 1)
  assert.equal(probe[0]!.attributes['arbiter.probe.attempts'], 1)
  const probeCall = ours.find((span) => span.kind === 3 && span.parentSpanId === probe[0]!.spanId)
  assert.ok(probeCall, 'no undici client span under the probe span')
  assert.equal(sent.split('-')[2], probeCall.spanId)

  const statements = ours.filter((span) => span.attributes['db.query.text'] !== undefined)
  assert.ok(statements.length > 0, 'no database statement spans')
  const odd = statements.filter(
    (span) => span.attributes['db.system.name'] !== 'postgresql' || span.kind !== 3,
  )
  assert.deepEqual(odd, [])
  // The decision's own statements are its children.
  assert.ok(statements.some((span) => span.parentSpanId === decide[0]!.spanId))

  // Every resource says which service it is.
  assert.ok(receiver.resources.every((resource) => resource['service.name'] === 'arbiter'))
  assert.ok(receiver.resources.every((resource) => resource['deployment.environment'] === 'test'))

  // The log lines written while serving the evaluation name its span.
  const lines = run.service
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
  const traced = lines.filter((line) => line.trace_id === traceId)
  assert.ok(traced.length > 0, 'no log line carries the trace id')
  assert.ok(traced.every((line) => typeof line.span_id === 'string' && /^[0-9a-f]{16}$/.test(line.span_id)))
  // The evaluation's own request line names the evaluation's server span.
  const requestLine = lines.find((line) => line.url === `/v1/outcomes/${outcomeId}/evaluate`)
  assert.equal(requestLine?.trace_id, traceId)
  assert.equal(requestLine?.span_id, evaluate.spanId)

  // Nothing exported carries the probe's secret or the evidence: ids, kinds, verdicts, sizes and codes only.
  await run.service.stop()
  const exported = receiver.bodies.join('\n')
  assert.ok(receiver.bodies.length > 0)
  assert.ok(!exported.includes(PROBE_SECRET), 'a span carries the probe secret')
  assert.ok(!exported.includes(EVIDENCE_TEXT), 'a span carries evidence text')
})

test('a failing probe run marks its span with the error code (service started by `arbiter serve`)', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const target = await startTarget(t, (_req, res) => json(res, 404, {}))
  const run = await startTracedService(
    t,
    {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}/v1/traces`,
      OTEL_SERVICE_NAME: 'arbiter-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
    [builtEntry('cli'), 'serve'],
  )
  await decideFlow(run, `${target.url}/refunds`, undefined)
  // The server span ends last (after the probe's and the decision's): it may come in a later export.
  await receiver.waitFor(
    (spans) =>
      named(spans, 'arbiter.probe').length > 0 && named(spans, 'POST /v1/outcomes/:id/evaluate').length > 0,
  )
  const probe = named(receiver.spans, 'arbiter.probe')[0]!
  assert.equal(probe.attributes['error.type'], 'status_mismatch')
  assert.equal(probe.status.code, 2)
  assert.equal(probe.attributes['http.response.status_code'], 404)
  assert.ok(receiver.resources.every((resource) => resource['service.name'] === 'arbiter-test'))
  // The CLI starts tracing before the database driver loads, as the server entry does.
  assert.ok(receiver.spans.some((span) => span.attributes['db.query.text'] !== undefined))
  // Without a caller's traceparent the request starts a trace of its own.
  const server = receiver.spans.find((span) => span.name === 'POST /v1/outcomes/:id/evaluate')
  assert.ok(server)
  assert.equal(server.parentSpanId, '')
  const modules = await run.modules()
  assert.ok(modules.some((url) => url.includes('/@opentelemetry/sdk-trace-node/')))
})

test('with no OTEL_* set, nothing is exported and no OpenTelemetry module is loaded', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const target = await startTarget(t, (_req, res) => json(res, 200, { state: 'settled' }))
  const run = await startTracedService(t, {})
  const traceparent = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`
  await decideFlow(run, `${target.url}/refunds`, traceparent)
  // No trace context is created, so none travels on: the probe target sees no traceparent.
  assert.equal(target.requests[0]!.headers.traceparent, undefined)
  assert.ok(!run.service.stdout().includes('"trace_id"'))
  const modules = await run.modules()
  // The recorder saw the service's own modules (it works) and nothing of OpenTelemetry's.
  assert.ok(modules.some((url) => url.endsWith('/engine/evaluate-case.js')))
  // Only the API package (a no-op until an SDK registers), which prom-client's process metrics load anyway.
  assert.deepEqual(
    modules.filter((url) => url.includes('/@opentelemetry/') && !url.includes('/@opentelemetry/api/')),
    [],
  )
  assert.equal(receiver.bodies.length, 0)
})
