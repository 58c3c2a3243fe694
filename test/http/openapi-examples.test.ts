import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import type { z } from 'zod'
import * as outcome from '../../src/cases/outcome/examples.ts'
import { OUTCOME_STORY } from '../../src/cases/outcome/routes.ts'
import {
  appendEvidenceBody,
  createOutcomeBody,
  interpretationBody,
  interpretationCreatedSchema,
  outcomeEnvelopeSchema,
  outcomeSchema,
  pendingSchema,
  resolutionBody,
} from '../../src/cases/outcome/schemas.ts'
import { registeredCaseSchemas } from '../../src/cases/registry.ts'
import { caseStorySchema } from '../../src/http/case-routes.ts'
import * as shared from '../../src/http/examples.ts'
import { listOperations } from '../../src/http/openapi-document.ts'
import { groundTruthSchema } from '../../src/http/schemas/ground-truth.ts'
import { OPENAPI_FILE } from '../../src/openapi-write.ts'
import { probeDefinitionSchema } from '../../src/probes/probe-definition.ts'
import { buildTestApp } from '../helpers/app.ts'

const outcomeStorySchema = caseStorySchema(OUTCOME_STORY, registeredCaseSchemas().auditRecord)

type Json = Record<string, unknown>

const document = JSON.parse(await readFile(OPENAPI_FILE, 'utf8')) as Json
const schemas = (document.components as { schemas: Record<string, Json> }).schemas
const operations = new Map(listOperations(document).map(({ key, operation }) => [key, operation]))

/** Whether a schema shows examples: itself, what it refers to, a member of anyOf, or a page's items. */
function showsExamples(schema: Json | undefined): boolean {
  if (!schema) return false
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return true
  if (typeof schema.$ref === 'string') return showsExamples(schemas[schema.$ref.split('/').pop()!])
  if (Array.isArray(schema.anyOf) && (schema.anyOf as Json[]).some(showsExamples)) return true
  const items = (schema.properties as Record<string, Json> | undefined)?.items
  return items !== undefined && showsExamples(items.items as Json)
}

/** Whether a request body or an answer shows an example: on its media type (`example`, `examples`) or schema. */
const showsMediaExample = (container: Json | undefined) =>
  Object.values((container?.content ?? {}) as Record<string, Json>).some(
    (media) =>
      media.example !== undefined || media.examples !== undefined || showsExamples(media.schema as Json),
  )

/** Operations that show a request example (those with a body) and an example of their success answer. */
const EXAMPLED: Record<string, string[]> = {
  'POST /v1/outcomes': ['201'],
  'GET /v1/outcomes': ['200'],
  'GET /v1/outcomes/{id}': ['200'],
  'POST /v1/outcomes/{id}/evidence': ['201'],
  'POST /v1/outcomes/{id}/interpretations': ['201'],
  'POST /v1/outcomes/{id}/evaluate': ['200', '202'],
  'POST /v1/outcomes/{id}/resolution': ['201'],
  'GET /v1/audit/outcomes/{id}': ['200'],
  'GET /v1/manifests': ['200'],
  'GET /v1/manifests/{id}': ['200'],
  'GET /v1/manifests/stream': ['200'],
  'POST /v1/probes': ['201'],
  'GET /v1/probes': ['200'],
  'GET /v1/probes/{id}': ['200'],
  'PUT /v1/probes/{id}': ['200'],
  'POST /v1/probes/{id}/dry-run': ['200'],
  'POST /v1/admin/keys': ['201'],
  'GET /v1/admin/keys': ['200'],
  'GET /v1/escalations': ['200'],
  'GET /v1/audit/records': ['200'],
  'GET /v1/audit/verify': ['200'],
  'GET /v1/audit/checkpoint': ['200'],
}

/** Ids and instants differ from run to run; everything else an example shows is what the service answers. */
const VARYING = new Set([
  'id',
  'outcome_id',
  'manifest_id',
  'supersedes',
  'probe_id',
  'interpretation_id',
  'by',
  'issued_at',
  'received_at',
  'created_at',
  'opened_at',
  'executed_at',
])
function masked(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(masked)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.entries(value).map(([key, member]) => [
      key,
      VARYING.has(key) && member !== null ? '<varies>' : masked(member),
    ]),
  )
}

describe('the OpenAPI examples', () => {
  it('show a request and an answer for the main operations', () => {
    for (const [key, statuses] of Object.entries(EXAMPLED)) {
      const operation = operations.get(key)
      assert.ok(operation, `${key} is documented`)
      const body = operation.requestBody as Json | undefined
      if (body) assert.ok(showsMediaExample(body), `${key}: a request example`)
      for (const status of statuses) {
        const response = (operation.responses as Record<string, Json>)[status]
        assert.ok(showsMediaExample(response), `${key} ${status}: an answer example`)
      }
    }
  })

  it('parse with the schemas of their routes', () => {
    const pairs: [string, z.ZodType, unknown][] = [
      ['create outcome', createOutcomeBody, outcome.createOutcomeExample],
      ['outcome', outcomeSchema, outcome.outcomeExample],
      ['evidence', appendEvidenceBody, outcome.appendEvidenceExample],
      ...outcome.interpretationExamples.map(
        (example) => ['interpretation', interpretationBody, example] as [string, z.ZodType, unknown],
      ),
      ['interpretation answer', interpretationCreatedSchema, outcome.interpretationCreatedExample],
      ['pending', pendingSchema, outcome.pendingExample],
      ['halt', outcomeEnvelopeSchema, outcome.haltEnvelopeExample],
      ['resolution', resolutionBody, outcome.resolutionExample],
      ['resolved', outcomeEnvelopeSchema, outcome.resolvedEnvelopeExample],
      ['story', outcomeStorySchema, outcome.outcomeStoryExample],
      ['audit record', registeredCaseSchemas().auditRecord, outcome.auditRecordExample],
      ['probe', probeDefinitionSchema, shared.probeDefinitionExample],
      ['dry run answer', groundTruthSchema, shared.dryRunAnswerExample],
    ]
    for (const [label, schema, example] of pairs) {
      const parsed = schema.safeParse(example)
      assert.ok(parsed.success, `${label}: ${parsed.error?.message}`)
    }
  })

  it('are what the service accepts and answers: the round trip, a key and a probe', async (t) => {
    const { request, adminKey, key } = await buildTestApp(t)
    const send = async (bearer: string, method: 'GET' | 'POST', url: string, payload?: object) => {
      const response = await request(bearer, { method, url, ...(payload ? { payload } : {}) })
      return { status: response.statusCode, body: response.json() as Json }
    }

    const createdKey = await send(adminKey, 'POST', '/v1/admin/keys', shared.createKeyExample)
    assert.equal(createdKey.status, 201)
    assert.deepEqual(Object.keys(createdKey.body).sort(), Object.keys(shared.createdKeyExample).sort())
    const planner = createdKey.body.key as string
    const reviewer = await key('orchestrator', ['reviewer'])
    const ops = await key('ops')

    const created = await send(planner, 'POST', '/v1/outcomes', outcome.createOutcomeExample)
    assert.equal(created.status, 201, JSON.stringify(created.body))
    assert.deepEqual(masked(created.body), masked(outcome.outcomeExample))
    const id = created.body.outcome_id as string
    const appended = await send(planner, 'POST', `/v1/outcomes/${id}/evidence`, outcome.appendEvidenceExample)
    assert.equal(appended.status, 201)
    const [plannerReading, reviewerReading] = outcome.interpretationExamples
    const first = await send(planner, 'POST', `/v1/outcomes/${id}/interpretations`, plannerReading!)
    assert.equal(first.status, 201)
    assert.deepEqual(masked(first.body), masked(outcome.interpretationCreatedExample))
    const second = await send(reviewer, 'POST', `/v1/outcomes/${id}/interpretations`, reviewerReading!)
    assert.equal(second.status, 201)

    const halt = await send(planner, 'POST', `/v1/outcomes/${id}/evaluate`)
    assert.equal(halt.status, 200)
    assert.deepEqual(masked(halt.body.manifest), masked(outcome.haltEnvelopeExample.manifest))
    const escalations = await send(ops, 'GET', '/v1/escalations')
    assert.deepEqual(masked((escalations.body.items as unknown[])[0]), masked(outcome.escalationExample))
    const resolved = await send(ops, 'POST', `/v1/outcomes/${id}/resolution`, outcome.resolutionExample)
    assert.equal(resolved.status, 201)
    assert.deepEqual(masked(resolved.body.manifest), masked(outcome.resolvedEnvelopeExample.manifest))

    const probe = await send(adminKey, 'POST', '/v1/probes', shared.probeDefinitionExample)
    assert.equal(probe.status, 201)
    assert.deepEqual(masked(probe.body), masked(shared.probeExample))
    const dryRun = await send(
      adminKey,
      'POST',
      `/v1/probes/${probe.body.probe_id}/dry-run`,
      shared.dryRunExample,
    )
    assert.equal(dryRun.status, 200, 'a probe error is still a 200 with `error` set')
  })
})
