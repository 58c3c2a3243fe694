import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import net from 'node:net'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import type { InjectOptions } from 'fastify'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { databaseSnapshotter } from '../helpers/db-snapshot.ts'
import {
  createFanout,
  FLOOR,
  haltedFanout,
  needsContext,
  SIXTY_K,
  ST3_RESULT,
  ST5_RESULT,
  submitResult,
  vantageBody,
} from '../helpers/fanout-fixtures.ts'
import { CRITERION, createOutcome, EVIDENCE, haltedOutcome } from '../helpers/fixtures.ts'
import { problemViolation } from '../helpers/load.ts'
import {
  createReview,
  DIGEST_1,
  decide,
  judge,
  PANELS,
  reviewBody as validReviewBody,
  verdict,
} from '../helpers/review-fixtures.ts'

/**
 * Hostile input (no 500 for anything a client can cause). Every POST/PUT route and every list query
 * is fed thousands of generated bodies: arbitrary JSON, arbitrary JS values pushed through JSON, mutations of
 * valid bodies, deep nesting, lone surrogates, NUL, prototype-pollution keys, wrong types, oversized documents.
 * Each answer must be a 2xx (the body happened to be valid) or a 4xx problem+json whose `status` is the HTTP
 * status, never a 5xx; and a rejected request must leave the database exactly as it was.
 */

const embedded = !process.env.TEST_DATABASE_URL
// Cases per POST/PUT route and for the list queries; the total stays in the thousands on both databases.
const RUNS_PER_ROUTE = embedded ? 350 : 500
const QUERY_RUNS = embedded ? 800 : 1_000

// ---------------------------------------------------------------------------------------------------------
// Generators

/** Percent-encodes any JS string, lone surrogates included (encodeURIComponent would throw on those). */
function percentEncode(value: string): string {
  return [...Buffer.from(value, 'utf8')]
    .map((byte) =>
      /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(byte))
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('')
}

const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    '\u0000',
    'a\u0000b',
    '\uD800',
    '\uDC00x',
    'x\uDBFF',
    '\uFEFF',
    '\u202E',
    '𝕏😀',
    '__proto__',
    'constructor',
    'prototype',
    '../../etc/passwd',
    "'; DROP TABLE outcomes; --",
    '{{params.x}}',
    'x'.repeat(201),
    'x'.repeat(10_001),
    'sha256:' + '0'.repeat(64),
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '2024-02-30T00:00:00Z',
    '00000000-0000-0000-0000-000000000000',
  ),
)

const nastyNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(
    0,
    -0,
    -1,
    1.5,
    2 ** 31,
    2 ** 53,
    2 ** 53 + 2,
    1e21,
    -1e308,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
  ),
)

const anyJson = fc.jsonValue({ stringUnit: 'binary', maxDepth: 6 })

const leaf = fc.oneof(
  { weight: 3, arbitrary: anyJson },
  { weight: 2, arbitrary: nastyString },
  { weight: 2, arbitrary: nastyNumber },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}, [[]], { '': null }) },
)

const pollutingKey = fc.constantFrom(
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  '',
)

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

interface Mutation {
  op: 'drop' | 'replace' | 'add' | 'wrap' | 'stringify' | 'pollute' | 'deep'
  at: number
  key: string
  value: Json
  depth?: number
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  op: fc.constantFrom('drop', 'replace', 'add', 'wrap', 'stringify', 'pollute', 'deep'),
  at: fc.nat(),
  key: fc.oneof(nastyString, pollutingKey),
  value: leaf as fc.Arbitrary<Json>,
})

/** Every place in a document: [parent, key] pairs, the root being [null, null]. */
function places(root: Json): [Json[] | { [key: string]: Json } | null, string | number | null][] {
  const found: [Json[] | { [key: string]: Json } | null, string | number | null][] = [[null, null]]
  const walk = (node: Json) => {
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        found.push([node, i])
        walk(child)
      })
    } else if (node !== null && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) {
        found.push([node, key])
        walk(child)
      }
    }
  }
  walk(root)
  return found
}

function setOwn(target: { [key: string]: Json }, key: string, value: Json) {
  // defineProperty, not assignment: `__proto__` becomes an own key that JSON.stringify writes out.
  Object.defineProperty(target, key, { value, enumerable: true, configurable: true, writable: true })
}

/** Applies mutations to a copy of a valid body and returns the JSON text to send. */
function mutate(valid: unknown, mutations: Mutation[]): string {
  let root = JSON.parse(JSON.stringify(valid)) as Json
  for (const generated of mutations) {
    // A private copy: fast-check hands out the same instance for constants, which a push would corrupt.
    const m = { ...generated, value: JSON.parse(JSON.stringify(generated.value)) as Json }
    const all = places(root)
    const [parent, key] = all[m.at % all.length]!
    const current = parent === null ? root : (parent as Record<string, Json>)[key as string]!
    let next: Json | undefined = current
    switch (m.op) {
      case 'drop':
        next = undefined
        break
      case 'replace':
        next = m.value
        break
      case 'wrap':
        next = m.at % 2 ? [current] : { [m.key]: current }
        break
      case 'deep':
        // A marker replaced by deeply nested JSON text after serialization (JSON.stringify itself would overflow).
        next = `${DEEP_MARKER}${m.depth ?? [65, 1_000, 20_000][m.at % 3]}`
        break
      case 'stringify':
        next = JSON.stringify(current) ?? null
        break
      case 'add':
      case 'pollute':
        if (current !== null && typeof current === 'object' && !Array.isArray(current)) {
          setOwn(current, m.op === 'pollute' ? ['__proto__', 'constructor'][m.at % 2]! : m.key, m.value)
        } else if (Array.isArray(current)) {
          current.push(m.value)
        } else {
          next = m.value
        }
        break
    }
    if (parent === null) root = next === undefined ? null : next
    else if (Array.isArray(parent)) {
      if (next === undefined) parent.splice(key as number, 1)
      else parent[key as number] = next
    } else if (next === undefined) delete parent[key as string]
    else setOwn(parent, key as string, next)
  }
  return JSON.stringify(root).replace(new RegExp(`"${DEEP_MARKER}(\\d+)"`, 'g'), (_match, depth: string) =>
    Number(depth) % 2 ? nested(Number(depth), '{"a":', '}') : nested(Number(depth), '[', ']'),
  )
}

const DEEP_MARKER = '__deeply_nested__'

function nested(depth: number, open: string, close: string, inner = '1'): string {
  return open.repeat(depth) + inner + close.repeat(depth)
}

/** Handwritten edge cases every route gets, on top of the generated ones. */
const EDGE_BODIES: string[] = [
  '',
  ' ',
  'null',
  'true',
  '0',
  '"text"',
  '[]',
  '{}',
  '{',
  '}',
  '{"a":1,}',
  "{'a':1}",
  '{"a":1}{"b":2}',
  '\uFEFF{}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":1e400}',
  '{"a":-1e400}',
  '{"a":123456789012345678901234567890}',
  '{"a":"\\u0000"}',
  '{"\\u0000":1}',
  '{"a":"\\ud800"}',
  '{"\\udfff":1}',
  '{"a":"\\x41"}',
  '{"a":1,"a":2}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"a":{"__proto__":{"polluted":true}}}',
  '[{"__proto__":{"polluted":true}}]',
  nested(65, '[', ']'),
  nested(65, '{"a":', '}'),
  nested(10_000, '[', ']'),
  nested(10_000, '{"a":', '}'),
  nested(100_000, '[', ']'),
  `[${'1,'.repeat(200_000)}1]`,
  `{${Array.from({ length: 20_000 }, (_, i) => `"k${i}":${i}`).join(',')}}`,
  `"${'\\ud83d'.repeat(1000)}"`,
]

/**
 * Every place of a valid body, systematically: a NUL, a lone surrogate, a 20,000-deep document and a
 * prototype-polluting object in each field in turn (free-JSON fields included, where the schema lets them in).
 */
function sweep(valid: unknown): string[] {
  const count = places(JSON.parse(JSON.stringify(valid)) as Json).length
  const variants: Omit<Mutation, 'at'>[] = [
    { op: 'replace', key: '', value: 'a\u0000b' },
    { op: 'replace', key: '', value: 'x\uD800' },
    { op: 'deep', key: '', value: null, depth: 20_000 },
    {
      op: 'replace',
      key: '',
      value: JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'),
    },
  ]
  return Array.from({ length: count }, (_, at) => variants.map((v) => mutate(valid, [{ ...v, at }]))).flat()
}

const OVERSIZED = JSON.stringify({ padding: 'x'.repeat(1024 * 1024 + 1) })

// ---------------------------------------------------------------------------------------------------------
// The app under attack

interface Target {
  name: string
  method: 'POST' | 'PUT'
  /** Path with `:id` where an id goes. */
  path: string
  id?: string
  valid: unknown
  /** Statuses a body that happens to be valid may get. */
  accepted: number[]
  /** Bodies that must be refused with a 4xx (and change nothing), whatever else the fuzzing finds. */
  hostile?: string[]
}

/**
 * A worker's return with the attacks a claim can carry: `value` nested past the depth limit, thousands of
 * qualifiers, `__proto__` keys in qualifiers and in `value`, a lone surrogate in an excerpt, NUL in a fact and
 * in a qualifier name.
 */
function hostileResults(): string[] {
  const claim = ST5_RESULT.claims[0]!
  const withClaim = (change: Record<string, unknown>) =>
    JSON.stringify({ ...ST5_RESULT, claims: [{ ...claim, ...change }] })
  const marker = '"__value__"'
  return [
    withClaim({ value: '__value__' }).replace(marker, nested(70, '{"a":', '}')),
    withClaim({ value: '__value__' }).replace(marker, nested(5_000, '[', ']')),
    withClaim({ qualifiers: Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`q${i}`, i])) }),
    withClaim({ qualifiers: { applies_to: 'x'.repeat(100_000) } }),
    withClaim({ qualifiers: '__q__' }).replace('"__q__"', '{"__proto__":{"polluted":true}}'),
    withClaim({ value: '__value__' }).replace(marker, '{"constructor":{"prototype":{"polluted":true}}}'),
    withClaim({ value: '__value__' }).replace(marker, '{"__proto__":{"polluted":true}}'),
    withClaim({ sources: [{ uri: 'crm://opp/118204', excerpt: 'x\uD800y' }] }),
    withClaim({ fact: 'vantage.enterprise.floor\u0000' }),
    withClaim({ qualifiers: { 'applies\u0000to': 'new_logos' } }),
    withClaim({ value: { note: '\uDC00' } }),
  ]
}

async function setup(t: Parameters<typeof buildTestApp>[0]) {
  const probeTarget = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"state":"settled"}')
  })
  probeTarget.listen(0, '127.0.0.1')
  await once(probeTarget, 'listening')
  t.after(() => new Promise<void>((resolve) => probeTarget.close(() => resolve())))
  const probeUrl = `http://127.0.0.1:${(probeTarget.address() as net.AddressInfo).port}`

  // Probes may call the local target only: a fuzzed URL never leaves the machine or waits on DNS.
  const app = await buildTestApp(t, { config: { probeAllowedHosts: ['127.0.0.1'] } })
  const admin = app.adminKey
  const orchestrator = await app.key('orchestrator', ['orch-a'])

  const probeBody = (name: string) => ({
    name,
    request: {
      method: 'GET',
      url: `${probeUrl}/refunds/{{params.refund_id}}?run={{outcome.run_id}}`,
      headers: { authorization: { env: 'LEDGER_TOKEN' }, 'x-trace': 'fuzz' },
    },
    timeout_ms: 500,
    retries: 0,
    predicate: { status: 200, pointer: '/state', map: { settled: 'success', reversed: 'failure' } },
  })
  const register = async (name: string) => {
    const response = await app.request(admin, { method: 'POST', url: '/v1/probes', payload: probeBody(name) })
    assert.equal(response.statusCode, 201, response.body)
    return response.json().probe_id as string
  }
  const dryRunProbe = await register('dry-run target')
  const putProbe = await register('put target')

  const existing = {
    subagent_id: 'fuzz-agent',
    run_id: 'fuzz-run-1',
    evidence: [
      ...EVIDENCE,
      { kind: 'side_effect_receipt', name: 'psp', content: { receipt: 'r-991', amounts: [1, 2.5, -3] } },
    ],
    expected_orchestrators: ['orch-a', 'orch-b'],
    deadline: '2026-11-29T18:00:00Z',
    arbiter_orchestrator_id: 'orch-a',
    probe: { probe_id: dryRunProbe, params: { refund_id: 're_1' } },
    fallback_policy: 'escalate' as const,
  }
  await createOutcome(app, orchestrator, existing)
  const open = await createOutcome(app, orchestrator)
  const empty = await createOutcome(app, orchestrator)
  const b = await app.key('orchestrator', ['orch-b'])
  const { outcome: halted } = await haltedOutcome(app, orchestrator, b)

  // Reviews of orch-a, which the orchestrator key speaks for: a council takes findings, a REVISE takes a revision.
  const reviewBody = {
    ...validReviewBody('two_stage'),
    review_key: 'fuzz-review-1',
    judges: [
      { judge_id: 'spec', model: 'Model-L', context_id: ' ctx-2', stage: 1 },
      { judge_id: 'quality', model: 'model-l', context_id: 'ctx-3', stage: 2, role: null },
    ],
  }
  const council = await createReview(app, orchestrator, 'council')
  const pendingReview = await createReview(app, orchestrator, 'two_stage')
  const revisable = await createReview(app, orchestrator, 'do_and_judge', { judges: PANELS.do_and_judge })
  await judge(app, orchestrator, revisable.review_id, verdict('solo', 'BLOCKED'))
  assert.equal((await decide(app, orchestrator, revisable.review_id)).manifest.directive, 'REVISE')
  // Fan-outs owned by orch-a: one open for results (it is never reconciled, so results are never refused), one
  // with every result in for reconcile, one HALTed for resolution.
  const fanoutBody = vantageBody({ orchestrator_id: 'orch-a', fanout_key: 'fuzz-vantage' })
  await createFanout(app, orchestrator, fanoutBody)
  const openFanout = await createFanout(app, orchestrator, vantageBody({ orchestrator_id: 'orch-a' }))
  const filledFanout = await createFanout(app, orchestrator, vantageBody({ orchestrator_id: 'orch-a' }))
  await submitResult(app, orchestrator, filledFanout.fanout_id, ST3_RESULT)
  await submitResult(app, orchestrator, filledFanout.fanout_id, needsContext('st_5'))
  const { fanout: haltedFan } = await haltedFanout(app, orchestrator, { orchestrator_id: 'orch-a' })

  const targets: Target[] = [
    { name: 'create review', method: 'POST', path: '/v1/reviews', valid: reviewBody, accepted: [200, 201] },
    {
      name: 'review verdict',
      method: 'POST',
      path: '/v1/reviews/:id/verdicts',
      id: council.review_id,
      valid: verdict('c1', 'DONE_WITH_CONCERNS', 0, {
        evidence: ['read cache.ts', { line: 42, ok: true }],
        findings: [
          {
            severity: 'high',
            title: 'Race in cache',
            location: 'cache.ts',
            lens: 'concurrency',
            detail: null,
          },
        ],
      }),
      accepted: [200, 201],
    },
    {
      name: 'review revision',
      method: 'POST',
      path: '/v1/reviews/:id/revisions',
      id: revisable.review_id,
      valid: { subject: { digest: DIGEST_1, description: 'second try', uri: 'https://git.example/pr/481' } },
      accepted: [201],
    },
    {
      name: 'decide review',
      method: 'POST',
      path: '/v1/reviews/:id/decide',
      id: pendingReview.review_id,
      valid: {},
      accepted: [200, 202],
    },
    { name: 'create outcome', method: 'POST', path: '/v1/outcomes', valid: existing, accepted: [200, 201] },
    {
      name: 'append evidence',
      method: 'POST',
      path: '/v1/outcomes/:id/evidence',
      id: open.outcome_id,
      valid: { evidence: [{ kind: 'log', name: 'ledger', content: { line: 'refund pending', n: 1 } }] },
      accepted: [200, 201],
    },
    {
      name: 'interpret',
      method: 'POST',
      path: '/v1/outcomes/:id/interpretations',
      id: open.outcome_id,
      valid: {
        orchestrator_id: 'orch-a',
        success_criterion: CRITERION,
        outcome_interpretation: 'failure',
        evidence_hash: open.evidence_hash,
        intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
        rationale: 'receipt missing from ledger',
      },
      accepted: [200, 201],
    },
    {
      name: 'evaluate',
      method: 'POST',
      path: '/v1/outcomes/:id/evaluate',
      id: empty.outcome_id,
      valid: {},
      accepted: [200, 202],
    },
    {
      name: 'resolve',
      method: 'POST',
      path: '/v1/outcomes/:id/resolution',
      id: halted.outcome_id,
      valid: { outcome: 'failure', rationale: 'ops checked the ledger', action_owner: 'orch-a' },
      accepted: [201],
    },
    { name: 'register probe', method: 'POST', path: '/v1/probes', valid: probeBody('new'), accepted: [201] },
    {
      name: 'replace probe',
      method: 'PUT',
      path: '/v1/probes/:id',
      id: putProbe,
      valid: probeBody('replaced'),
      accepted: [200],
    },
    {
      name: 'dry-run probe',
      method: 'POST',
      path: '/v1/probes/:id/dry-run',
      id: dryRunProbe,
      valid: { params: { refund_id: 're_1' }, outcome: { subagent_id: 'fuzz-agent', run_id: 'fuzz-run-1' } },
      accepted: [200],
    },
    { name: 'create fan-out', method: 'POST', path: '/v1/fanouts', valid: fanoutBody, accepted: [200, 201] },
    {
      name: 'submit result',
      method: 'POST',
      path: '/v1/fanouts/:id/results',
      id: openFanout.fanout_id,
      valid: ST5_RESULT,
      accepted: [200, 201],
      hostile: hostileResults(),
    },
    {
      name: 'reconcile',
      method: 'POST',
      path: '/v1/fanouts/:id/reconcile',
      id: filledFanout.fanout_id,
      valid: { close: true },
      accepted: [200, 202],
    },
    {
      name: 'resolve fan-out',
      method: 'POST',
      path: '/v1/fanouts/:id/resolution',
      id: haltedFan.fanout_id,
      valid: {
        facts: [
          {
            fact: FLOOR,
            answer: { value: SIXTY_K, effective_date: '2025-01-22', qualifiers: { applies_to: 'new_logos' } },
          },
        ],
        rationale: 'sales confirmed the carve-out',
      },
      accepted: [201],
    },
    {
      name: 'create key',
      method: 'POST',
      path: '/v1/admin/keys',
      valid: { role: 'orchestrator', orchestrator_ids: ['orch-z'], label: 'fuzzed key' },
      accepted: [201],
    },
  ]
  return { app, admin, orchestrator, targets }
}

/**
 * Sends one request and checks it against the contract; only `accepted` statuses may change the database.
 * Violations are collected (one example per kind, with a count) rather than thrown, so one run reports every
 * distinct way the service breaks; the test asserts the list is empty at the end.
 */
function makeChecker(app: TestApp, snapshot: () => Promise<Record<string, string>>) {
  let before: Record<string, string> | undefined
  const statuses = new Map<number, number>()
  const violations = new Map<string, { count: number; example: string }>()
  let cases = 0
  const violated = (kind: string, example: string) => {
    const seen = violations.get(kind)
    if (seen) seen.count += 1
    else violations.set(kind, { count: 1, example: example.slice(0, 1500) })
  }
  return {
    statuses,
    get cases() {
      return cases
    },
    /** Every distinct violation, as lines a reader can act on; empty when the contract held. */
    report: () => [...violations].map(([kind, v]) => `${kind} (×${v.count}), e.g. ${v.example}`),
    async check(options: InjectOptions, bearer: string | null, accepted: number[], label: string) {
      before ??= await snapshot()
      const response = await app.request(bearer, options)
      cases += 1
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1)
      const what = () =>
        `${options.method} ${String(options.url).slice(0, 160)} ${String(options.payload ?? '').slice(0, 300)} → ${response.statusCode} ${response.body.slice(0, 400)}`
      const after = await snapshot()
      if (response.statusCode >= 500) violated(`${label}: ${response.statusCode}`, what())
      if (response.statusCode >= 400) {
        const problem = problemViolation({
          status: response.statusCode,
          headers: response.headers,
          body: response.body,
        })
        if (problem) violated(`${label}: ${response.statusCode} not a problem (${problem})`, what())
        if (JSON.stringify(after) !== JSON.stringify(before)) {
          violated(`${label}: rejected with ${response.statusCode} but the database changed`, what())
        }
      } else {
        if (!accepted.includes(response.statusCode))
          violated(`${label}: unexpected ${response.statusCode}`, what())
        const type = String(response.headers['content-type'] ?? '')
        if (!/^application\/(json|x-ndjson)/.test(type))
          violated(`${label}: 2xx with content-type ${type}`, what())
      }
      before = after
      return response.statusCode
    },
  }
}

// fast-check's seed, printed with the results: FUZZ_SEED=<n> replays a run.
const SEED = Number(process.env.FUZZ_SEED) || Math.floor(Math.random() * 2 ** 31)

// One app and database for the whole file (an embedded database takes seconds to create), closed at the end.
const cleanups: (() => Promise<void> | void)[] = []
after(async () => {
  for (const cleanup of cleanups) await cleanup()
})
let shared: ReturnType<typeof setup> | undefined
const sharedSetup = () => {
  shared ??= setup({ after: (fn) => void cleanups.push(fn as () => Promise<void>) })
  return shared
}

describe('hostile input', () => {
  it('answers every fuzzed POST/PUT body with a 2xx or a 4xx problem, never a 5xx, and rejected ones change nothing', async (t) => {
    const { app, admin, orchestrator, targets } = await sharedSetup()
    const checker = makeChecker(app, await databaseSnapshotter(app.app.db))
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()

    /** `segment` is the id as it goes on the wire (already percent-encoded, or deliberately malformed). */
    const url = (target: Target, segment?: string) =>
      target.path.replace(':id', segment ?? percentEncode(target.id ?? ''))
    const send = (
      target: Target,
      payload: string,
      extra: { segment?: string; bearer?: string | null } = {},
    ) =>
      checker.check(
        {
          method: target.method,
          url: url(target, extra.segment),
          payload,
          headers: { 'content-type': 'application/json' },
        },
        extra.bearer === undefined ? admin : extra.bearer,
        target.accepted,
        target.name,
      )

    for (const target of targets) {
      // Handwritten edge cases and an oversized body.
      for (const body of [...EDGE_BODIES, ...sweep(target.valid)]) await send(target, body)
      for (const body of target.hostile ?? []) {
        const status = await send(target, body)
        assert.ok(status >= 400 && status < 500, `${target.name}: a hostile body is a 4xx, got ${status}`)
      }
      assert.equal(await send(target, OVERSIZED), 413, `${target.name}: an oversized body is a 413`)

      const body = fc.oneof(
        {
          weight: 4,
          arbitrary: fc.array(mutation, { minLength: 1, maxLength: 4 }).map((m) => mutate(target.valid, m)),
        },
        { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
        {
          weight: 1,
          arbitrary: fc
            .anything({ withNullPrototype: true, withBoxedValues: true, withSparseArray: true, maxDepth: 4 })
            .map((v) => {
              try {
                return JSON.stringify(v) ?? 'null'
              } catch {
                return 'null'
              }
            }),
        },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
      )
      const segment = target.id
        ? fc.oneof(
            { weight: 24, arbitrary: fc.constant(target.id) },
            { weight: 2, arbitrary: fc.uuid() },
            { weight: 2, arbitrary: nastyString.map(percentEncode) },
            {
              weight: 1,
              arbitrary: fc.constantFrom(
                '%',
                '%E0%A4%A',
                '%ZZ',
                '%00',
                '%C0%80',
                '..',
                '%2F',
                'x'.repeat(101),
              ),
            },
          )
        : fc.constant(undefined)
      const bearer = fc.oneof(
        { weight: 20, arbitrary: fc.constant(admin) },
        { weight: 1, arbitrary: fc.constant(orchestrator) },
        { weight: 1, arbitrary: fc.constantFrom(null, 'arb_not-a-key', 'x'.repeat(600)) },
      )
      await fc.assert(
        fc.asyncProperty(body, segment, bearer, async (payload, segmentValue, key) => {
          await send(target, payload, { segment: segmentValue, bearer: key })
        }),
        { numRuns: RUNS_PER_ROUTE, seed: SEED + targets.indexOf(target) },
      )
    }

    // Other media types, charsets and framing.
    const keys = targets.find((x) => x.name === 'create key')!
    const raw = async (headers: Record<string, string>, payload: string | Buffer) =>
      checker.check(
        { method: 'POST', url: '/v1/admin/keys', payload, headers },
        admin,
        keys.accepted,
        'framing',
      )
    const validKey = JSON.stringify(keys.valid)
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      '',
    ]) {
      assert.ok((await raw({ 'content-type': type }, validKey)) >= 400)
    }
    assert.ok(
      (await raw({ 'content-type': 'application/json' }, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))) >= 400,
    )
    assert.ok(
      (await raw({ 'content-type': 'application/json' }, Buffer.from('{"role":"\xff"}', 'latin1'))) >= 400,
    )
    await raw({ 'content-type': 'application/json; charset=utf-16' }, validKey)

    t.diagnostic(
      `seed ${SEED}, fuzzed bodies ${checker.cases}, statuses ${JSON.stringify(Object.fromEntries(checker.statuses))}`,
    )
    assert.deepEqual(checker.report(), [], 'every answer kept the contract')
    assert.deepEqual(
      Object.getOwnPropertyNames(Object.prototype).sort(),
      prototypeKeys,
      'no prototype pollution',
    )
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  it('answers every fuzzed list query with 200 or a 4xx problem and never writes', async (t) => {
    const { app, admin } = await sharedSetup()
    const checker = makeChecker(app, await databaseSnapshotter(app.app.db))
    const routes = [
      '/v1/outcomes',
      '/v1/reviews',
      '/v1/fanouts',
      '/v1/manifests',
      '/v1/audit/records',
      '/v1/audit/verify',
      '/v1/escalations',
      '/v1/admin/keys',
      '/v1/probes',
    ]
    const cursorOf = (value: unknown) =>
      Buffer.from(JSON.stringify(value) ?? '', 'utf8').toString('base64url')
    const names = fc.oneof(
      fc.constantFrom(
        'limit',
        'cursor',
        'subagent_id',
        'outcome_id',
        'review_id',
        'fanout_id',
        'orchestrator_id',
        'status',
        'verdict',
        'directive',
        'kind',
        'since',
        'from',
        'to',
        'from_seq',
        'to_seq',
        '__proto__',
        'constructor',
        '__proto__[polluted]',
        'limit[]',
      ),
      nastyString,
    )
    const encoded = fc.oneof(
      { weight: 4, arbitrary: nastyString.map(percentEncode) },
      { weight: 2, arbitrary: nastyNumber.map((n) => percentEncode(String(n))) },
      {
        weight: 2,
        arbitrary: fc
          .oneof(
            fc.record({ seq: nastyNumber }),
            fc.record({ seq: nastyString }),
            fc.record({ at: nastyString, id: fc.oneof(fc.uuid(), nastyString) }),
            anyJson,
          )
          .map(cursorOf),
      },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          '',
          '-1',
          '0',
          '501',
          '1e309',
          'NaN',
          'Infinity',
          '9'.repeat(40),
          '0x10',
          '%',
          '%zz',
          '%00',
          '%ED%A0%80',
          '%C0%AF',
          '%E2%80%AE',
          'open',
          'handed_back',
          'APPLY',
          'HALT',
          'PROCEED',
          'HUMAN_RESOLVED',
          'manifest.issued',
          '0000-01-01T00:00:00Z',
          '9999-12-31T23:59:59Z',
          '1970-01-01T00:00:00.000000001Z',
          '2024-01-01T00:00:00%2B14:00',
          '00000000-0000-0000-0000-000000000000',
        ),
      },
    )
    const query = fc
      .array(fc.tuple(names, encoded), { maxLength: 6 })
      .map((pairs) => pairs.map(([name, value]) => `${percentEncode(name)}=${value}`).join('&'))
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        query,
        fc.boolean(),
        fc.constantFrom('application/json', 'application/x-ndjson', 'text/html', '*/*'),
        async (route, qs, withKey, accept) => {
          await checker.check(
            { method: 'GET', url: `${route}?${qs}`, headers: { accept } },
            withKey ? admin : null,
            [200],
            'list query',
          )
        },
      ),
      { numRuns: QUERY_RUNS, seed: SEED },
    )
    t.diagnostic(
      `seed ${SEED}, fuzzed queries ${checker.cases}, statuses ${JSON.stringify(Object.fromEntries(checker.statuses))}`,
    )
    assert.deepEqual(checker.report(), [], 'every answer kept the contract')
  })
})

describe('hostile clients', () => {
  let port: Promise<number> | undefined
  const listening = async () => {
    const { app } = await sharedSetup()
    port ??= app.app
      .listen({ port: 0, host: '127.0.0.1' })
      .then(() => (app.app.server.address() as net.AddressInfo).port)
    return { app, port: await port }
  }

  /** Writes `request` on a raw socket and resolves with what came back before the server closed it. */
  async function rawExchange(port: number, request: string, timeoutMs = 10_000) {
    const socket = net.connect(port, '127.0.0.1')
    await once(socket, 'connect')
    const chunks: Buffer[] = []
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.write(request)
    const closed = once(socket, 'close').then(() => true)
    const timedOut = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref())
    const wasClosed = await Promise.race([closed, timedOut])
    socket.destroy()
    return { closed: wasClosed, response: Buffer.concat(chunks).toString('latin1') }
  }

  it('refuses 100 KB of headers, or 2,000 of them, with a 431 problem and keeps serving', async () => {
    const { port } = await listening()
    const big = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100 * 1024)}\r\n\r\n`
    const many = `GET /healthz HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${'v'.repeat(40)}\r\n`).join('')}\r\n`
    for (const request of [big, many]) {
      const answer = await rawExchange(port, request)
      assert.ok(answer.closed, 'the connection is closed')
      assert.ok(answer.response.startsWith('HTTP/1.1 431'), answer.response.slice(0, 100))
      assert.match(answer.response, /content-type: application\/problem\+json/i, 'a 431 is a problem too')
      const problem = JSON.parse(answer.response.slice(answer.response.indexOf('\r\n\r\n') + 4))
      assert.equal(problem.status, 431)
      assert.equal(problem.type, 'urn:arbiter:problem:headers-too-large')
    }
    const fine = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    assert.match(fine.response, /^HTTP\/1\.1 200/)
  })

  it('bounds how long a slow client may take to send its request, and serves others meanwhile', async () => {
    const { app, port } = await listening()
    // Production default: 30 s (the test below proves the cut-off with a short limit).
    const server = app.app.server
    assert.equal(server.requestTimeout, 30_000, 'requestTimeout is set')
    assert.ok(
      server.headersTimeout > 0 && server.headersTimeout <= 60_000,
      `headersTimeout ${server.headersTimeout}`,
    )
    const slow = net.connect(port, '127.0.0.1')
    await once(slow, 'connect')
    slow.on('error', () => {})
    slow.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')
    const drip = setInterval(() => slow.write('X-Slow: y\r\n'), 50)
    try {
      for (let i = 0; i < 5; i++) {
        const other = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
        assert.match(other.response, /^HTTP\/1\.1 200/, 'other clients are served while one dribbles')
      }
    } finally {
      clearInterval(drip)
      slow.destroy()
    }
  })

  it('cuts off a client that dribbles its headers forever with 408', async (t) => {
    const app = await buildTestApp(t, { config: { requestTimeoutMs: 1_500 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.app.server.address() as net.AddressInfo).port
    const slow = net.connect(port, '127.0.0.1')
    await once(slow, 'connect')
    const received: Buffer[] = []
    slow.on('data', (chunk) => received.push(chunk))
    slow.on('error', () => {})
    slow.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')
    const drip = setInterval(() => slow.writable && slow.write('X-Slow: y\r\n'), 100)
    const started = Date.now()
    try {
      const closed = once(slow, 'close').then(() => true)
      const gaveUp = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000).unref())
      assert.ok(await Promise.race([closed, gaveUp]), 'the slow client was disconnected')
    } finally {
      clearInterval(drip)
      slow.destroy()
    }
    const elapsed = Date.now() - started
    assert.ok(elapsed >= 1_000 && elapsed < 6_000, `cut after ${elapsed} ms`)
    const response = Buffer.concat(received).toString('latin1')
    assert.ok(response === '' || response.startsWith('HTTP/1.1 408'), response.slice(0, 80))
    if (response !== '') assert.match(response, /content-type: application\/problem\+json/i)
  })

  it('cuts off a client that dribbles its body forever with 408 problem+json, and closes the connection', async (t) => {
    const app = await buildTestApp(t, { config: { requestTimeoutMs: 1_500 } })
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.app.server.address() as net.AddressInfo).port
    // The node server itself holds the whole-request timeout, not only the header timeout.
    assert.equal(app.app.server.requestTimeout, 1_500)
    assert.ok(app.app.server.headersTimeout <= 1_500, `headersTimeout ${app.app.server.headersTimeout}`)
    const key = await app.key('orchestrator', ['orch-a'])
    const slow = net.connect(port, '127.0.0.1')
    await once(slow, 'connect')
    const received: Buffer[] = []
    slow.on('data', (chunk) => received.push(chunk))
    slow.on('error', () => {})
    slow.write(
      `POST /v1/outcomes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{',
    )
    const drip = setInterval(() => slow.writable && slow.write(' '), 100)
    const started = Date.now()
    try {
      const closed = new Promise<boolean>((resolve) => slow.once('close', () => resolve(true)))
      const gaveUp = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 15_000).unref())
      assert.ok(await Promise.race([closed, gaveUp]), 'the slow body was cut off')
    } finally {
      clearInterval(drip)
      slow.destroy()
    }
    const elapsed = Date.now() - started
    assert.ok(elapsed >= 1_000, `cut after ${elapsed} ms, not before the timeout`)
    const response = Buffer.concat(received).toString('latin1')
    assert.match(response, /^HTTP\/1\.1 408 /, response.slice(0, 80))
    assert.match(response, /content-type: application\/problem\+json/i)
    assert.match(response, /connection: close/i)
    const problem = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))
    assert.equal(problem.status, 408)
    assert.match(problem.detail, /1500 ms/)
  })
})
