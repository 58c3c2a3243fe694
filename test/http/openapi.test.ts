import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { CASE_KIND_MODULES } from '../../src/cases/registry.ts'
import { listOperations, operationIdsOf } from '../../src/http/openapi-document.ts'
import { OPENAPI_FILE } from '../../src/openapi-write.ts'
import { buildTestApp } from '../helpers/app.ts'

type Json = Record<string, unknown>

// The committed document: conventions.test.ts holds it identical to what the routes produce.
const document = JSON.parse(await readFile(OPENAPI_FILE, 'utf8')) as Json
const operations = listOperations(document)

/** Every `$ref` in a value, with where it was found. */
function refsOf(value: unknown, at: string, into: { at: string; ref: string }[]) {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) refsOf(item, `${at}/${i}`, into)
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, member] of Object.entries(value)) {
      if (key === '$ref' && typeof member === 'string') into.push({ at, ref: member })
      else refsOf(member, `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, into)
    }
  }
  return into
}

/** What a local reference (`#/a/b~1c`) points at in the document, or undefined. */
function resolve(ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined
  let node: unknown = document
  for (const token of ref.slice(2).split('/')) {
    const key = decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~')
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return undefined
    node = (node as Json)[key]
  }
  return node
}

const PUBLIC = [
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
  'GET /.well-known/jwks.json',
  'GET /openapi.json',
  'GET /docs',
  'GET /console',
]

const responsesOf = (operation: Json) => (operation.responses ?? {}) as Record<string, Json>
const operation = (key: string) => {
  const found = operations.find((o) => o.key === key)
  assert.ok(found, `${key} is documented`)
  return found.operation
}

describe('the OpenAPI document', () => {
  it('refers only to things it declares: every $ref resolves inside the document', () => {
    const refs = refsOf(document, '#', [])
    assert.ok(refs.length > 100, 'the walk finds the references')
    const dangling = refs.filter(({ ref }) => resolve(ref) === undefined)
    assert.deepEqual(dangling, [], 'references to nothing')
  })

  it('writes free JSON (evidence content, success_criterion, probe params) as the JsonValue component', () => {
    const schemas = (document.components as { schemas: Json }).schemas
    assert.ok(schemas.JsonValue && schemas.JsonValueInput)
    assert.equal(schemas.__shared, undefined)
    const bodySchema = (key: string) =>
      (operation(key).requestBody as { content: Record<string, { schema: Json }> }).content[
        'application/json'
      ]!.schema as { properties: Record<string, Json & { properties?: Record<string, Json> }> }
    const jsonValue = { $ref: '#/components/schemas/JsonValueInput' }
    const probe = bodySchema('POST /v1/outcomes').properties.probe?.properties?.params
    assert.deepEqual(probe?.additionalProperties, jsonValue, 'probe params')
    const interpretation = bodySchema('POST /v1/outcomes/{id}/interpretations').properties
    assert.deepEqual(interpretation.success_criterion, jsonValue, 'success_criterion')
    const evidence = schemas.EvidenceItemInput as { properties: Json }
    assert.deepEqual(evidence.properties.content, jsonValue, 'evidence content')
  })

  it('gives every operation a unique camelCase operationId, from the one table of them', () => {
    const missing = operations
      .filter(({ operation: o }) => typeof o.operationId !== 'string')
      .map((o) => o.key)
    assert.deepEqual(
      missing,
      [],
      `operations without an operationId: add them to SHARED_OPERATION_IDS or the kind's docs`,
    )
    const ids = operations.map(({ operation: o }) => o.operationId as string)
    assert.equal(new Set(ids).size, ids.length, 'operationIds are unique')
    for (const id of ids) assert.match(id, /^[a-z][a-zA-Z0-9]*$/, `${id} is camelCase`)
    const table = operationIdsOf(CASE_KIND_MODULES)
    for (const { key, operation: o } of operations) assert.equal(o.operationId, table[key], key)
    const documented = new Set(operations.map(({ key }) => key))
    const stale = Object.keys(table).filter((key) => !documented.has(key))
    assert.deepEqual(stale, [], 'the table names only operations the document has')
    assert.equal(operation('POST /v1/outcomes').operationId, 'createOutcome')
    assert.equal(operation('GET /v1/manifests/{id}').operationId, 'getManifest')
  })

  it('marks exactly the public routes as needing no key, and they answer without one', async (t) => {
    const open = operations
      .filter(({ operation: o }) => Array.isArray(o.security) && o.security.length === 0)
      .map(({ key }) => key)
    assert.deepEqual(open.sort(), [...PUBLIC].sort())
    for (const { key, operation: o } of operations) {
      if (!PUBLIC.includes(key)) assert.equal(o.security, undefined, `${key} inherits the bearer requirement`)
    }
    assert.deepEqual(document.security, [{ bearer: [] }])
    const { request } = await buildTestApp(t)
    for (const key of PUBLIC) {
      const url = key.slice('GET '.length)
      const response = await request(null, { method: 'GET', url })
      assert.ok(response.statusCode < 400, `${key} without a key: ${response.statusCode}`)
    }
  })

  it('lists its groups with the API first and the service pages last, each used and described', () => {
    const tags = document.tags as { name: string; description: string }[]
    const names = tags.map((tag) => tag.name)
    assert.equal(names[0], 'outcomes')
    assert.equal(names.at(-1), 'operations')
    const used = new Set(operations.flatMap(({ operation: o }) => (o.tags as string[] | undefined) ?? []))
    assert.deepEqual([...used].sort(), [...names].sort(), 'every group listed is used, every one used listed')
    for (const tag of tags) assert.ok(tag.description.length > 0, tag.name)
  })

  it('describes under `webhooks` each event Arbiter sends, its Standard Webhooks headers and its body', () => {
    const webhooks = document.webhooks as Record<string, { post: Json }>
    assert.deepEqual(Object.keys(webhooks).sort(), [
      'escalation.opened',
      'escalation.resolved',
      'manifest.issued',
      'webhook.test',
    ])
    const ids = new Set<unknown>()
    for (const [type, { post }] of Object.entries(webhooks)) {
      ids.add(post.operationId)
      assert.deepEqual(post.security, [], `${type}: signed, not authenticated by a key`)
      const headers = post.parameters as { name: string; in: string; required: boolean }[]
      assert.deepEqual(
        headers.map((header) => `${header.in}:${header.name}:${header.required}`),
        ['header:webhook-id:true', 'header:webhook-timestamp:true', 'header:webhook-signature:true'],
        type,
      )
      const body = (post.requestBody as { content: Record<string, { schema: { $ref: string } }> }).content
      const schema = resolve(body['application/json']!.schema.$ref) as { properties: Record<string, Json> }
      const typeSchema = schema.properties.type!
      assert.ok(typeSchema.const === type || (typeSchema.enum as string[]).includes(type), type)
    }
    assert.equal(ids.size, 4, 'an operationId each')
    const schemas = (document.components as Json).schemas as Record<
      string,
      { properties: Record<string, Json> }
    >
    // The bodies carry what the API answers: a manifest's envelope, an escalation as listed.
    assert.equal(
      schemas.WebhookManifestIssued!.properties.data!.$ref,
      '#/components/schemas/ManifestEnvelope',
    )
    assert.equal(
      schemas.WebhookEscalationEvent!.properties.data!.$ref,
      '#/components/schemas/WebhookEscalation',
    )
    const { envelope, ...listed } = schemas.WebhookEscalation!.properties
    assert.deepEqual(listed, schemas.Escalation!.properties, 'the escalation as listed')
    assert.equal(envelope!.$ref, '#/components/schemas/ManifestEnvelope')
  })

  it("says that an envelope's audit_seq can be null until the log places the manifest", () => {
    const schemas = (document.components as Json).schemas as Record<string, Json>
    const envelopes = Object.entries(schemas).filter(
      ([, schema]) => 'audit_seq' in ((schema.properties as Json) ?? {}),
    )
    assert.ok(envelopes.length >= 3, 'the envelope of every case kind')
    for (const [name, schema] of envelopes) {
      const auditSeq = (schema.properties as Record<string, Json>).audit_seq!
      assert.match(String(auditSeq.description), /can be null in the answer that issued the manifest/, name)
      assert.match(String(auditSeq.description), /GET \/v1\/manifests\/\{id\}/, name)
    }
  })

  it('documents the manifest stream as text/event-stream, with 401 and 403 as problem+json', () => {
    const responses = responsesOf(operation('GET /v1/manifests/stream'))
    assert.deepEqual(Object.keys(responses['200']?.content as Json), ['text/event-stream'])
    for (const status of ['400', '401', '403']) {
      assert.deepEqual(Object.keys(responses[status]?.content as Json), ['application/problem+json'], status)
    }
  })

  it('marks bodies that may be left out as optional (evaluate needs none), and the service agrees', async (t) => {
    const optional = operations
      .filter(({ operation: o }) => (o.requestBody as { required?: boolean } | undefined)?.required === false)
      .map(({ key }) => key)
    assert.deepEqual(optional.sort(), [
      'POST /v1/fanouts/{id}/reconcile',
      'POST /v1/outcomes/{id}/evaluate',
      'POST /v1/probes/{id}/dry-run',
      'POST /v1/reviews/{id}/decide',
    ])
    const { request, key } = await buildTestApp(t)
    const orchestrator = await key('orchestrator', ['orch-a'])
    const created = await request(orchestrator, {
      method: 'POST',
      url: '/v1/outcomes',
      payload: {
        subagent_id: 'sa-openapi',
        run_id: 'run-1',
        evidence: [{ kind: 'log', content: 'ok' }],
        expected_orchestrators: ['orch-a'],
      },
    })
    assert.equal(created.statusCode, 201, created.body)
    const evaluated = await request(orchestrator, {
      method: 'POST',
      url: `/v1/outcomes/${created.json().outcome_id}/evaluate`,
    })
    assert.equal(evaluated.statusCode, 202, `an evaluate without a body: ${evaluated.body}`)
  })

  it('documents every error answer as application/problem+json, and 400/401/403 (404 with an id) where they apply', () => {
    for (const { key, operation: o } of operations) {
      const responses = responsesOf(o)
      for (const [status, response] of Object.entries(responses)) {
        if (Number(status) < 400) continue
        assert.deepEqual(
          Object.keys(response.content as Json),
          ['application/problem+json'],
          `${key} ${status}`,
        )
        assert.notEqual(response.description, 'Default Response', `${key} ${status} says what it means`)
      }
      if (PUBLIC.includes(key)) continue
      for (const status of ['400', '401', '403']) assert.ok(responses[status], `${key} documents ${status}`)
      if (key.includes('{id}')) assert.ok(responses['404'], `${key} documents 404`)
    }
  })

  it('passes the Redocly lint (redocly.yaml) with no error and no warning', async () => {
    const run = promisify(execFile)
    const { stdout } = await run(
      process.execPath,
      ['node_modules/@redocly/cli/bin/cli.js', 'lint', '--format=json', '--max-problems=1000'],
      { env: { ...process.env, REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', REDOCLY_TELEMETRY: 'off' } },
    ).catch((err: { stdout?: string; stderr?: string }) => {
      // The CLI exits non-zero on errors; its report is still on stdout.
      if (!err.stdout) throw err
      return { stdout: err.stdout }
    })
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number; ignored: number }
      problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[]
    }
    const problems = report.problems
      .filter((p) => p.severity !== 'ignore')
      .map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)
    assert.deepEqual(problems, [])
    assert.equal(report.totals.errors, 0)
    assert.equal(report.totals.warnings, 0)
  })
})

describe('the docs page (/docs)', () => {
  it("carries Arbiter's name and mark, not Swagger's or Fastify's", async (t) => {
    const { request } = await buildTestApp(t)
    const page = await request(null, { method: 'GET', url: '/docs' })
    assert.equal(page.statusCode, 200)
    assert.match(page.body, /<title>Arbiter API<\/title>/)
    const icon = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(page.body)
    assert.ok(icon, 'an SVG icon of its own')
    assert.doesNotMatch(page.body, /favicon-32x32\.png/, "not Swagger's icon")
    const iconFile = await request(null, { method: 'GET', url: icon[1]! })
    assert.equal(iconFile.statusCode, 200)
    assert.match(iconFile.body, /<title>Arbiter<\/title>/)

    const script = await request(null, { method: 'GET', url: '/docs/static/swagger-initializer.js' })
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)'/.exec(script.body)
    assert.ok(logo, 'the top bar shows a logo of its own, as a data: image (no inline script or style)')
    const svg = Buffer.from(logo[1]!, 'base64').toString('utf8')
    assert.match(svg, /<text[^>]*>Arbiter API<\/text>/)
    assert.doesNotMatch(svg, /fastify|swagger/i)
  })
})
