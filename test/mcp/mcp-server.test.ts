import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { after, before, describe, it, type TestContext } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { buildTestApp, type TestApp } from '../helpers/app.ts'

/*
 * The MCP server end to end: the SDK's own client spawns `node dist/cli.js mcp` (run `npm run build` first) and
 * talks to it over stdio; the server calls a live Arbiter over HTTP (PostgreSQL at TEST_DATABASE_URL, else the
 * embedded database). Nothing is stubbed between the agent's tool call and the service's signed answer.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')
const CLI = join(ROOT, 'dist', 'cli.js')

const TOOL_NAMES = [
  'record_outcome',
  'submit_interpretation',
  'evaluate_outcome',
  'get_manifest',
  'verify_manifest',
  'create_fanout',
  'submit_worker_result',
  'reconcile_fanout',
  'create_review',
  'submit_verdict',
  'decide_review',
  'list_escalations',
  'list_webhooks',
  'register_webhook',
]

// One live Arbiter for the file, closed after its last test.
// node:test's suite-level `after`: the app only ever registers a context-free cleanup.
// Webhooks may point at loopback here: the receiver registered below is this machine's discard port.
const live: TestApp = await buildTestApp({ after } as unknown as Pick<TestContext, 'after'>, {
  config: { webhooks: { allowPrivate: true } },
})
await live.app.listen({ port: 0, host: '127.0.0.1' })
const baseUrl = `http://127.0.0.1:${(live.app.server.address() as AddressInfo).port}`
const clients: Client[] = []

/** An MCP client connected to a fresh `arbiter mcp` process calling Arbiter with `apiKey`. */
async function connect(apiKey: string): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp'],
    env: { ARBITER_URL: baseUrl, ARBITER_API_KEY: apiKey, PATH: process.env.PATH ?? '' },
    stderr: 'pipe',
    cwd: ROOT,
  })
  const client = new Client({ name: 'arbiter-test', version: '0.0.0' })
  await client.connect(transport)
  clients.push(client)
  return client
}

type Structured = Record<string, unknown> & { manifest?: Record<string, unknown> }

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<Structured> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  assert.notEqual(result.isError, true, `${name} failed: ${JSON.stringify(result.content)}`)
  assert.ok(result.structuredContent, `${name} returns structured content`)
  const text = result.content[0]
  assert.ok(text?.type === 'text')
  assert.deepEqual(
    JSON.parse(text.text),
    result.structuredContent,
    'the text is the same JSON, for older hosts',
  )
  return result.structuredContent as Structured
}

async function callError(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  assert.equal(result.isError, true, `${name} should fail: ${JSON.stringify(result.structuredContent)}`)
  const text = result.content[0]
  assert.ok(text?.type === 'text')
  return { text: text.text, problem: result.structuredContent as Record<string, unknown> }
}

const EVIDENCE = [
  { kind: 'result_payload', name: 'result', content: { refund_id: 're_1', status: 'ok' } },
  { kind: 'exit_code', content: 0 },
]

describe('arbiter mcp over stdio, against a live Arbiter', () => {
  let orchestrator: Client
  let ops: Client
  let dashboard: Client
  let admin: Client

  before(async () => {
    ;[orchestrator, ops, dashboard, admin] = await Promise.all([
      connect(await live.key('orchestrator', ['orch-a', 'orch-b', 'scout'])),
      connect(await live.key('ops')),
      connect(await live.key('dashboard')),
      connect(live.adminKey),
    ])
  })
  after(async () => {
    await Promise.all(clients.map((client) => client.close()))
  })

  it('lists the fourteen tools, each with a description and an object input schema from the routes', async () => {
    const { tools } = await orchestrator.listTools()
    assert.deepEqual(tools.map((tool) => tool.name).sort(), [...TOOL_NAMES].sort())
    for (const tool of tools) {
      assert.equal(tool.inputSchema.type, 'object', tool.name)
      assert.ok((tool.description ?? '').length > 100, `${tool.name} says enough to act on`)
    }
    const byName = new Map(tools.map((tool) => [tool.name, tool.inputSchema as Record<string, unknown>]))
    const outcome = byName.get('record_outcome')!
    assert.deepEqual(outcome.required, ['subagent_id', 'run_id', 'evidence'])
    assert.equal(outcome.additionalProperties, false)
    // The status report is a union: every branch takes the path id beside its own keys.
    const verdict = byName.get('submit_verdict')!
    const branches = verdict.oneOf as { properties: Record<string, unknown>; required: string[] }[]
    assert.equal(branches.length, 4)
    for (const branch of branches) {
      assert.ok(branch.required.includes('review_id') && branch.required.includes('judge_id'))
      assert.ok('review_id' in branch.properties)
    }
    assert.deepEqual((byName.get('evaluate_outcome')!.required as string[]).sort(), ['outcome_id'])
  })

  it('runs an outcome: record, two interpretations, evaluate, get, verify', async () => {
    const outcome = await call(orchestrator, 'record_outcome', {
      subagent_id: 'refund-agent',
      run_id: 'mcp-run-1',
      evidence: EVIDENCE,
      expected_orchestrators: ['orch-a', 'orch-b'],
    })
    const outcomeId = outcome.outcome_id as string
    assert.equal(outcome.status, 'open')
    const pending = await call(orchestrator, 'evaluate_outcome', { outcome_id: outcomeId })
    assert.deepEqual(pending, { status: 'pending', missing_orchestrators: ['orch-a', 'orch-b'] })

    const criterion = { require: ['exit_code == 0'] }
    const a = await call(orchestrator, 'submit_interpretation', {
      outcome_id: outcomeId,
      orchestrator_id: 'orch-a',
      success_criterion: criterion,
      outcome_interpretation: 'success',
      intended_action: { kind: 'proceed', resources: ['refund:re_1'] },
    })
    assert.equal(a.revision, 1)
    await call(orchestrator, 'submit_interpretation', {
      outcome_id: outcomeId,
      orchestrator_id: 'orch-b',
      success_criterion: criterion,
      outcome_interpretation: 'failure',
      intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
      rationale: 'no receipt in the ledger',
    })

    const envelope = await call(orchestrator, 'evaluate_outcome', { outcome_id: outcomeId })
    const manifest = envelope.manifest!
    assert.equal(manifest.directive, 'HALT')
    assert.equal(typeof envelope.jws, 'string')

    const fetched = await call(dashboard, 'get_manifest', { manifest_id: manifest.manifest_id })
    assert.deepEqual(fetched.manifest, manifest)

    const verified = await call(dashboard, 'verify_manifest', { manifest_id: manifest.manifest_id })
    assert.equal(verified.valid, true)
    assert.equal(verified.manifest_id, manifest.manifest_id)
    assert.equal(verified.directive, 'HALT')
    assert.equal(verified.manifest_digest, envelope.manifest_digest)

    // An envelope whose manifest was changed after signing is not valid, and says which check refused it.
    const tampered = { ...envelope, manifest: { ...manifest, directive: 'PROCEED' } }
    const refused = await call(dashboard, 'verify_manifest', { envelope: tampered })
    assert.equal(refused.valid, false)
    assert.equal(typeof refused.check, 'string')
    assert.equal(typeof refused.reason, 'string')
  })

  it('runs a fan-out: create, two worker results, reconcile', async () => {
    const fanout = await call(orchestrator, 'create_fanout', {
      orchestrator_id: 'scout',
      fanout_key: 'mcp-fanout-1',
      question: 'How much was refunded?',
      facts: ['refund.amount'],
      subtasks: [
        { subtask_id: 'ledger', facts: ['refund.amount'] },
        { subtask_id: 'psp', facts: ['refund.amount'] },
      ],
    })
    const fanoutId = fanout.fanout_id as string
    for (const [subtask, amount, uri] of [
      ['ledger', 42, 'ledger://refunds/1'],
      ['psp', 40, 'https://psp.example/refunds/1'],
    ] as const) {
      const recorded = await call(orchestrator, 'submit_worker_result', {
        fanout_id: fanoutId,
        subtask_id: subtask,
        status: 'DONE',
        summary: `read ${uri}`,
        evidence: [uri],
        claims: [{ fact: 'refund.amount', value: amount, sources: [{ uri }] }],
      })
      assert.equal(recorded.subtask_id, subtask)
      assert.equal(recorded.revision, 1)
    }
    const reconciled = await call(orchestrator, 'reconcile_fanout', { fanout_id: fanoutId })
    assert.equal(reconciled.manifest!.kind, 'reconciliation')
    assert.equal(reconciled.manifest!.directive, 'HALT', 'two amounts and no rule to choose: a human decides')
    const again = await call(orchestrator, 'reconcile_fanout', { fanout_id: fanoutId, close: true })
    assert.equal(again.manifest!.manifest_id, reconciled.manifest!.manifest_id)
  })

  it('runs a review: create, a verdict, decide', async () => {
    const review = await call(orchestrator, 'create_review', {
      orchestrator_id: 'scout',
      review_key: 'mcp-PR-1',
      mode: 'do_and_judge',
      subject: { digest: `sha256:${'ab'.repeat(32)}`, description: 'retry the refund once' },
      implementer: { model: 'model-m', context_id: 'ctx-impl' },
      judges: [{ judge_id: 'solo', model: 'model-j', context_id: 'ctx-judge' }],
    })
    const reviewId = review.review_id as string
    const pending = await call(orchestrator, 'decide_review', { review_id: reviewId })
    assert.deepEqual(pending, { status: 'pending', missing_judges: ['solo'] })
    const verdict = await call(orchestrator, 'submit_verdict', {
      review_id: reviewId,
      judge_id: 'solo',
      revision: 0,
      status: 'DONE',
      summary: 'The retry is bounded and tested.',
      evidence: ['test refund_retry_once passes'],
    })
    assert.equal(verdict.judge_id, 'solo')
    const decided = await call(orchestrator, 'decide_review', { review_id: reviewId })
    assert.equal(decided.manifest!.kind, 'review')
    assert.equal(decided.manifest!.directive, 'APPLY')
    const verified = await call(dashboard, 'verify_manifest', { envelope: decided })
    assert.equal(verified.valid, true)
  })

  it('lists the escalations the HALTs opened, for ops', async () => {
    const page = await call(ops, 'list_escalations', { status: 'open', limit: '10' })
    const items = page.items as { case: string; verdict: string }[]
    assert.deepEqual(items.map((item) => item.case).sort(), ['fanout', 'outcome'])
    assert.equal(page.next_cursor, null)
    const fanouts = await call(ops, 'list_escalations', { case: 'fanout' })
    assert.equal((fanouts.items as unknown[]).length, 1)
  })

  it('registers and lists webhooks for an admin key, and refuses them to an ops key', async () => {
    const registered = await call(admin, 'register_webhook', {
      url: 'http://127.0.0.1:9/arbiter',
      events: ['escalation.resolved'],
      filter: { orchestrator_id: 'orch-a' },
      description: 'registered by an agent',
    })
    assert.match(registered.secret as string, /^whsec_/, 'the secret, once, for the receiver')
    assert.equal((registered.filter as Record<string, unknown>).orchestrator_id, 'orch-a')
    const listed = await call(admin, 'list_webhooks', { limit: '10' })
    const items = listed.items as Record<string, unknown>[]
    const mine = items.find((item) => item.webhook_id === registered.webhook_id)
    assert.ok(mine, 'the new webhook is listed')
    assert.equal(mine.url, 'http://127.0.0.1:9/arbiter')
    assert.equal('secret' in mine, false, 'never the secret')

    const refused = await callError(ops, 'list_webhooks', {})
    assert.equal(refused.problem.status, 403)
    assert.ok(refused.text.startsWith('403 '), refused.text)
    const invalid = await callError(admin, 'register_webhook', { url: 'http://127.0.0.1:9/x', events: [] })
    assert.match(invalid.text, /\/events: /)

    const { tools } = await admin.listTools()
    const hints = new Map(tools.map((tool) => [tool.name, tool.annotations]))
    assert.equal(hints.get('register_webhook')?.idempotentHint, false, 'each call registers another')
    assert.equal(hints.get('list_webhooks')?.readOnlyHint, true)
  })

  it('refuses invalid arguments before calling Arbiter, naming each field', async () => {
    const { text, problem } = await callError(orchestrator, 'submit_verdict', {
      review_id: 'not-a-uuid',
      judge_id: 'solo',
      revision: 0,
      status: 'BLOCKED',
      summary: 'no',
      evidence: ['only allowed beside DONE'],
      colour: 'blue',
    })
    const errors = problem.errors as { path: string; message: string }[]
    const paths = errors.map((error) => error.path).sort()
    assert.deepEqual(paths, ['/blocking_reason', '/colour', '/evidence', '/review_id'])
    for (const path of paths) assert.match(text, new RegExp(`${path}: `))
    assert.match(text, /\/blocking_reason: required when status is BLOCKED/)

    const missing = await callError(orchestrator, 'record_outcome', { subagent_id: 'x', evidence: [] })
    assert.match(missing.text, /\/run_id: /)
    assert.match(missing.text, /\/evidence: at least one evidence item/)
  })

  it('turns a problem+json answer into a tool error with its detail (a dashboard key may not evaluate)', async () => {
    const { outcome_id: outcomeId } = await call(orchestrator, 'record_outcome', {
      subagent_id: 'refund-agent',
      run_id: 'mcp-run-403',
      evidence: EVIDENCE,
    })
    const { text, problem } = await callError(dashboard, 'evaluate_outcome', { outcome_id: outcomeId })
    assert.equal(problem.status, 403)
    assert.equal(typeof problem.detail, 'string')
    assert.ok((problem.detail as string).length > 0)
    assert.ok(text.startsWith('403 '), text)
    assert.ok(text.includes(problem.detail as string), text)

    // A 422 carries the service's field errors into the text as well.
    const review = await call(orchestrator, 'create_review', {
      orchestrator_id: 'scout',
      review_key: 'mcp-PR-2',
      mode: 'do_and_judge',
      subject: { digest: `sha256:${'cd'.repeat(32)}` },
      implementer: { model: 'model-m', context_id: 'ctx-impl' },
      judges: [{ judge_id: 'solo', model: 'model-j', context_id: 'ctx-judge' }],
    })
    const unknownJudge = await callError(orchestrator, 'submit_verdict', {
      review_id: review.review_id,
      judge_id: 'nobody',
      revision: 0,
      status: 'BLOCKED',
      summary: 'no',
      blocking_reason: 'who am I',
    })
    assert.equal(unknownJudge.problem.status, 422)
    assert.ok(unknownJudge.text.includes(unknownJudge.problem.detail as string))
    for (const error of (unknownJudge.problem.errors ?? []) as { path: string }[]) {
      assert.ok(unknownJudge.text.includes(error.path))
    }
  })
})

describe('arbiter mcp as a process', () => {
  async function run(env: Record<string, string>, input: string) {
    const child = spawn(process.execPath, [CLI, 'mcp'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk
    })
    child.stdin.end(input)
    // 'close': the output is all read once the pipes close, which may be after the process exits.
    const [code] = (await once(child, 'close')) as [number]
    return { code, stdout, stderr }
  }

  it('exits 2 with a clear message, and nothing on stdout, when ARBITER_URL or ARBITER_API_KEY is unset', async () => {
    const noUrl = await run({ ARBITER_API_KEY: 'k' }, '')
    assert.equal(noUrl.code, 2)
    assert.equal(noUrl.stdout, '')
    assert.match(noUrl.stderr, /ARBITER_URL is not set/)
    const noKey = await run({ ARBITER_URL: 'http://127.0.0.1:9' }, '')
    assert.equal(noKey.code, 2)
    assert.equal(noKey.stdout, '')
    assert.match(noKey.stderr, /ARBITER_API_KEY is not set/)
  })

  it('writes only protocol messages on stdout, and stops when stdin closes', async () => {
    const messages = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]
    const { code, stdout, stderr } = await run(
      { ARBITER_URL: baseUrl, ARBITER_API_KEY: await live.key('dashboard') },
      messages.map((message) => `${JSON.stringify(message)}\n`).join(''),
    )
    assert.equal(code, 0)
    const lines = stdout.split('\n').filter((line) => line !== '')
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { id: number }).id),
      [1, 2],
      'one JSON-RPC answer per request, nothing else',
    )
    assert.match(stderr, new RegExp(`serving ${baseUrl.replaceAll('.', '\\.')} over stdio`))
  })

  it('checks the key once at start: one the service refuses, or no service, exits 2 saying so', async () => {
    const unknown = await run({ ARBITER_URL: baseUrl, ARBITER_API_KEY: 'arb_nope' }, '')
    assert.equal(unknown.code, 2)
    assert.equal(unknown.stdout, '')
    assert.match(
      unknown.stderr,
      /^arbiter mcp: http:\/\/127\.0\.0\.1:\d+ refused ARBITER_API_KEY \(401: .+\)/,
    )
    assert.doesNotMatch(unknown.stderr, /serving/)

    const nobody = await run({ ARBITER_URL: 'http://127.0.0.1:9', ARBITER_API_KEY: 'arb_nope' }, '')
    assert.equal(nobody.code, 2)
    assert.match(
      nobody.stderr,
      /^arbiter mcp: cannot reach Arbiter at http:\/\/127\.0\.0\.1:9 to check ARBITER_API_KEY/,
    )
  })
})
