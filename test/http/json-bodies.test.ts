import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import canonicalize from 'canonicalize'
import { canonicalJson, rememberCanonicalParts } from '../../src/domain/shared/canonical-json.ts'
import { WORKER_BODY_BYTES } from '../../src/http/plugins/app/json-body.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { CRITERION, clientEvidenceHash, clientHash, createOutcome, uniqueRun } from '../helpers/fixtures.ts'

/** A `POST /v1/outcomes` body, as text, whose one evidence item's content is `content` written as is. */
function outcomeText(content: string, subagentId = REFUSED): string {
  return `{"subagent_id":"${subagentId}","run_id":"${uniqueRun('ijson')}","evidence":[{"kind":"result_payload","content":${content}}]}`
}

/** The sub-agent of every body that must be refused: none of its outcomes may exist. */
const REFUSED = 'ijson-refused'

// One app for the whole file (creating a database per test costs more than the tests); the 413 test has its own.
const cleanups: (() => Promise<void>)[] = []
after(async () => {
  for (const cleanup of cleanups) await cleanup()
})
let shared: Promise<{ app: TestApp; orch: string }> | undefined
function sharedApp() {
  shared ??= (async () => {
    const app = await buildTestApp({ after: (fn) => void cleanups.push(fn as () => Promise<void>) })
    return { app, orch: await app.key('orchestrator', ['orch-a']) }
  })()
  return shared
}

async function postOutcome(
  app: TestApp,
  key: string,
  payload: string | Buffer,
  contentType = 'application/json',
) {
  return app.request(key, {
    method: 'POST',
    url: '/v1/outcomes',
    payload,
    headers: { 'content-type': contentType },
  })
}

/** The 400 problem of a body that is not I-JSON, with its one error at `path`. */
function assertRefused(response: { statusCode: number; body: string }, path: string, message: RegExp) {
  assert.equal(response.statusCode, 400, response.body)
  const problem = JSON.parse(response.body)
  assert.equal(problem.type, 'urn:arbiter:problem:validation-error')
  assert.equal(problem.errors.length, 1, response.body)
  assert.equal(problem.errors[0].path, path, response.body)
  assert.match(problem.errors[0].message, message)
  assert.match(problem.detail, message)
}

async function outcomeCount(app: TestApp, key: string, subagentId = REFUSED): Promise<number> {
  const list = await app.request(key, {
    method: 'GET',
    url: `/v1/outcomes?subagent_id=${subagentId}&limit=500`,
  })
  return list.json().items.length
}

/** Evidence content whose canonical text is about `bytes` long: a log of many small objects. */
function largeContent(bytes: number): { lines: { at: number; level: string; msg: string }[]; note: string } {
  const lines = []
  for (let i = 0; i * 60 < bytes; i++) {
    lines.push({
      at: i,
      level: i % 7 === 0 ? 'warn' : 'info',
      msg: `step ${i} done, ünïcödé ✓ token ${i * 7919}`,
    })
  }
  return { lines, note: 'large' }
}

describe('request bodies are I-JSON', () => {
  const refused: [content: string, pointer: string, message: RegExp][] = [
    ['123456789012345678901234567890', '', /integer 123456789012345678901234567890 is beyond ±2\^53/],
    ['9007199254740993', '', /beyond ±2\^53/],
    ['-9007199254740993', '', /beyond ±2\^53/],
    ['{"amount":[1,2,9007199254740993]}', '/amount/2', /beyond ±2\^53/],
    ['1e400', '', /overflows a double/],
    ['-1e400', '', /overflows a double/],
    ['1e-400', '', /underflows a double/],
    ['{"x":[-2.5e-400]}', '/x/0', /underflows a double/],
    ['{"a":1,"a":2}', '/a', /duplicate member name "a"/],
    ['{"a":1,"\\u0061":2}', '/a', /duplicate member name "a"/],
    ['{"deep":[{"k/~":{"b":1,"b":1}}]}', '/deep/0/k~1~0/b', /duplicate member name "b"/],
  ]
  for (const [content, pointer, message] of refused) {
    it(`refuses evidence content ${content} with a 400 at body/evidence/0/content${pointer}`, async () => {
      const { app, orch } = await sharedApp()
      const response = await postOutcome(app, orch, outcomeText(content))
      assertRefused(response, `body/evidence/0/content${pointer}`, message)
      assert.equal(await outcomeCount(app, orch), 0)
    })
  }

  it('refuses duplicate member names outside free JSON too', async () => {
    const { app, orch } = await sharedApp()
    assertRefused(
      await postOutcome(
        app,
        orch,
        `{"subagent_id":"x","subagent_id":"${REFUSED}","run_id":"r","evidence":[]}`,
      ),
      'body/subagent_id',
      /duplicate member name "subagent_id"/,
    )
    assert.equal(await outcomeCount(app, orch), 0)
  })

  it('reads other numbers as the nearest double, and integers up to ±2^53 exactly', async () => {
    const { app, orch } = await sharedApp()
    const content =
      '{"ratio":0.66,"max":9007199254740992,"min":-9007199254740992,"zero":0e-400,"big":1.5e300}'
    const created = await postOutcome(app, orch, outcomeText(content, 'ijson-numbers'))
    assert.equal(created.statusCode, 201, created.body)
    const item = { kind: 'result_payload', content: JSON.parse(content) }
    assert.deepEqual(created.json().evidence, [item])
    assert.equal(created.json().evidence_hash, clientEvidenceHash([item]))
  })

  const invalidUtf8: [string, number[]][] = [
    ['a lone 0xFF byte', [0xff]],
    ['a truncated two-byte sequence', [0xc3, 0x28]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a truncated three-byte sequence', [0xe2, 0x82]],
  ]
  for (const [name, bytes] of invalidUtf8) {
    it(`refuses invalid UTF-8 (${name}) instead of replacing it`, async () => {
      const { app, orch } = await sharedApp()
      const [before, after] = outcomeText('"__"').split('__') as [string, string]
      const payload = Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)])
      assertRefused(await postOutcome(app, orch, payload), 'body', /not valid UTF-8/)
      assert.equal(await outcomeCount(app, orch), 0)
    })
  }

  it('reads valid UTF-8 as it is', async () => {
    const { app, orch } = await sharedApp()
    const created = await postOutcome(app, orch, Buffer.from(outcomeText('"é€😀"', 'ijson-utf8')))
    assert.equal(created.statusCode, 201, created.body)
    assert.equal(created.json().evidence[0].content, 'é€😀')
  })

  for (const type of [
    'application/json; charset=latin1',
    'application/json; charset=ISO-8859-1',
    'application/json;charset="utf-16"',
    'application/json; charset=utf-8; charset=latin1',
  ]) {
    it(`refuses ${type}`, async () => {
      const { app, orch } = await sharedApp()
      assertRefused(await postOutcome(app, orch, outcomeText('1'), type), 'headers/content-type', /charset/)
      assert.equal(await outcomeCount(app, orch), 0)
    })
  }

  it('accepts charset utf-8 or utf8 in any case, or none', async () => {
    const { app, orch } = await sharedApp()
    for (const type of [
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=UTF-8',
      'application/json;charset=utf8',
      'application/json; charset="UTF-8"',
    ]) {
      const created = await postOutcome(app, orch, outcomeText('1', 'ijson-charset'), type)
      assert.equal(created.statusCode, 201, `${type}: ${created.body}`)
    }
  })
})

describe('large request bodies', () => {
  it('are read in a worker thread and hash exactly as the client computes', async () => {
    const { app, orch } = await sharedApp()
    const evidence = [
      { kind: 'result_payload', name: 'result', content: largeContent(200 * 1024) },
      { kind: 'log', content: largeContent(80 * 1024).lines },
      { kind: 'exit_code', content: 0 },
    ]
    const body = { subagent_id: 'ijson-large', run_id: uniqueRun('large'), evidence }
    assert.ok(Buffer.byteLength(JSON.stringify(body)) >= WORKER_BODY_BYTES * 4)
    const read = app.app.jsonBodyWorkers.bodiesRead
    const created = await app.request(orch, { method: 'POST', url: '/v1/outcomes', payload: body })
    assert.equal(created.statusCode, 201, created.body.slice(0, 500))
    assert.equal(app.app.jsonBodyWorkers.bodiesRead, read + 1, 'the body was read by a worker')
    const outcome = created.json()
    assert.deepEqual(outcome.evidence, evidence)
    assert.deepEqual(outcome.evidence_versions[0].item_hashes, evidence.map(clientHash).sort())
    assert.equal(outcome.evidence_hash, clientEvidenceHash(evidence))

    // The request digest too: the same body again is the same outcome, one byte different is a conflict.
    const again = await app.request(orch, { method: 'POST', url: '/v1/outcomes', payload: body })
    assert.equal(again.statusCode, 200)
    assert.equal(again.json().outcome_id, outcome.outcome_id)
    const changed = {
      ...body,
      evidence: [{ ...evidence[0]!, content: { ...largeContent(200 * 1024), note: 'x' } }],
    }
    const conflict = await app.request(orch, { method: 'POST', url: '/v1/outcomes', payload: changed })
    assert.equal(conflict.statusCode, 409)

    // A criterion near its size limit: its signature is the client's hash of it (a body this small is read on
    // the main thread).
    const criterion = { ...CRITERION, appendix: largeContent(5 * 1024) }
    assert.ok(Buffer.byteLength(JSON.stringify(criterion)) > 6 * 1024)
    const submitted = await app.request(orch, {
      method: 'POST',
      url: `/v1/outcomes/${outcome.outcome_id}/interpretations`,
      payload: { orchestrator_id: 'orch-a', success_criterion: criterion, outcome_interpretation: 'success' },
    })
    assert.equal(submitted.statusCode, 201, submitted.body)
    assert.equal(submitted.json().success_criterion_signature, clientHash(criterion))
    assert.equal(app.app.jsonBodyWorkers.bodiesRead, read + 3)
  })

  it('canonicalize in the worker exactly as on the main thread', async () => {
    const { app } = await sharedApp()
    const value = {
      z: largeContent(50 * 1024),
      a: [largeContent(20 * 1024), { '\u20ac': 1, '\r': [0.1, 1e21, -0, 'x'], '1': largeContent(9 * 1024) }],
      s: 'é'.repeat(30_000),
    }
    const text = JSON.stringify(value)
    const reading = await app.app.jsonBodyWorkers.read(Buffer.from(text))
    assert.ok(reading.ok)
    assert.equal(reading.text, text)
    assert.ok(reading.parts.length >= 3, 'the large parts come back canonicalized')
    const copy = JSON.parse(reading.text)
    rememberCanonicalParts(copy, reading.parts)
    assert.equal(canonicalJson(copy), canonicalize(value))
  })

  it('are refused exactly as small ones are', async () => {
    const { app, orch } = await sharedApp()
    const padding = JSON.stringify(largeContent(WORKER_BODY_BYTES * 2))
    const read = app.app.jsonBodyWorkers.bodiesRead
    assertRefused(
      await postOutcome(app, orch, outcomeText(`{"pad":${padding},"more":{"n":1,"n":2}}`)),
      'body/evidence/0/content/more/n',
      /duplicate member name "n"/,
    )
    assertRefused(
      await postOutcome(app, orch, outcomeText(`{"pad":${padding},"n":[1e-400]}`)),
      'body/evidence/0/content/n/0',
      /underflows/,
    )
    const [before, after] = outcomeText(`{"pad":${padding},"s":"__"}`).split('__') as [string, string]
    assertRefused(
      await postOutcome(
        app,
        orch,
        Buffer.concat([Buffer.from(before), Buffer.from([0xff]), Buffer.from(after)]),
      ),
      'body',
      /not valid UTF-8/,
    )
    const malformed = await postOutcome(app, orch, outcomeText(`{"pad":${padding},}`))
    assert.equal(malformed.statusCode, 400)
    assert.equal(malformed.json().type, 'urn:arbiter:problem:malformed-json')
    assert.equal(app.app.jsonBodyWorkers.bodiesRead, read + 4)
    assert.equal(await outcomeCount(app, orch), 0)
  })
})

describe('415 and 413 say what is accepted', () => {
  it('415 names application/json', async () => {
    const { app, orch } = await sharedApp()
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const response = await postOutcome(app, orch, outcomeText('1'), type)
      assert.equal(response.statusCode, 415, response.body)
      assert.equal(response.json().type, 'urn:arbiter:problem:unsupported-media-type')
      assert.match(response.json().detail, /application\/json/)
      assert.match(response.json().detail, new RegExp(type.replace('/', '\\/')))
    }
  })

  it('413 names the limit in bytes and ARBITER_BODY_LIMIT_BYTES', async (t) => {
    const app = await buildTestApp(t, { config: { bodyLimitBytes: 4096 } })
    const orch = await app.key('orchestrator', ['orch-a'])
    const response = await postOutcome(app, orch, outcomeText(`"${'x'.repeat(5000)}"`))
    assert.equal(response.statusCode, 413, response.body)
    assert.equal(response.json().type, 'urn:arbiter:problem:payload-too-large')
    assert.match(response.json().detail, /4096 bytes/)
    assert.match(response.json().detail, /ARBITER_BODY_LIMIT_BYTES/)
    await createOutcome(app, orch, { subagent_id: 'ijson-small' })
  })
})
