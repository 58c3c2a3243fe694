/**
 * What the OpenAPI document says beyond the routes' zod schemas, written in one place: each shared operation's
 * `operationId` and group (a case kind's come from its registry entry, `docs`), the pages that are public but not
 * JSON, and the finishing pass over the generated document (error answers as problem+json, optional bodies, no
 * unused components, free JSON's definition). The swagger plugin applies it.
 */

import type { CaseKindModule } from './case-kinds.ts'
import { webhooksSection } from './openapi-webhooks.ts'
import { JSON_VALUE_ID } from './schemas/common.ts'
import { withJsonValueDefinition } from './schemas/taken-as-is.ts'

type Json = Record<string, unknown>

/**
 * The `operationId` of every operation the shared routes serve, by `METHOD /openapi/path`; each case kind's come
 * from its registry entry (`docs.operationIds`). Stable names clients may generate methods from: never rename
 * one. A route added without an entry here or in its kind's fails the OpenAPI test that requires one.
 */
export const SHARED_OPERATION_IDS: Readonly<Record<string, string>> = {
  // operations
  'GET /healthz': 'getHealth',
  'GET /readyz': 'getReadiness',
  'GET /metrics': 'getMetrics',
  'GET /openapi.json': 'getOpenApiDocument',
  'GET /docs': 'getApiDocs',
  'GET /console': 'getConsole',
  // keys
  'POST /v1/admin/keys': 'createApiKey',
  'GET /v1/admin/keys': 'listApiKeys',
  'DELETE /v1/admin/keys/{id}': 'revokeApiKey',
  // probes
  'POST /v1/probes': 'createProbe',
  'GET /v1/probes': 'listProbes',
  'GET /v1/probes/{id}': 'getProbe',
  'PUT /v1/probes/{id}': 'replaceProbe',
  'POST /v1/probes/{id}/dry-run': 'dryRunProbe',
  // the audit log
  'GET /v1/audit/records': 'listAuditRecords',
  'GET /v1/audit/verify': 'verifyAuditLog',
  'GET /v1/audit/checkpoint': 'getAuditCheckpoint',
  'GET /v1/audit/proofs/inclusion': 'getInclusionProof',
  'GET /v1/audit/proofs/consistency': 'getConsistencyProof',
  // escalations
  'GET /v1/escalations': 'listEscalations',
  // webhooks
  'POST /v1/webhooks': 'createWebhook',
  'GET /v1/webhooks': 'listWebhooks',
  'GET /v1/webhooks/{id}': 'getWebhook',
  'PATCH /v1/webhooks/{id}': 'updateWebhook',
  'DELETE /v1/webhooks/{id}': 'deleteWebhook',
  'POST /v1/webhooks/{id}/rotate-secret': 'rotateWebhookSecret',
  'GET /v1/webhooks/{id}/deliveries': 'listWebhookDeliveries',
  'POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver': 'redeliverWebhookDelivery',
  'POST /v1/webhooks/{id}/test': 'sendWebhookTestEvent',
  // manifests
  'GET /.well-known/jwks.json': 'getJwks',
  'GET /v1/manifests': 'listManifests',
  'GET /v1/manifests/stream': 'streamManifests',
  'GET /v1/manifests/{id}': 'getManifest',
  'GET /v1/manifests/{id}/inclusion': 'getManifestInclusion',
}

/** The `operationId` of every operation of an app serving these kinds: the shared routes', then each kind's. */
export function operationIdsOf(kinds: readonly CaseKindModule[]): Readonly<Record<string, string>> {
  return Object.assign({}, SHARED_OPERATION_IDS, ...kinds.map((kind) => kind.docs.operationIds))
}

const text = (mediaType: string, description: string) => ({
  description,
  content: { [mediaType]: { schema: { type: 'string' } } },
})

/**
 * Public routes that answer something other than JSON, and so carry no zod response schema of their own
 * (`/docs` is registered by @fastify/swagger-ui). The document describes them here; they need no key.
 */
export const PUBLIC_PAGES: Readonly<Record<string, Json>> = {
  '/metrics': {
    tags: ['operations'],
    summary: 'Prometheus metrics: request latency, verdicts, probe latency and errors, the database pool',
    response: { 200: text('text/plain', 'The metrics in the Prometheus text format') },
  },
  '/openapi.json': {
    tags: ['operations'],
    summary: 'This OpenAPI document',
    response: {
      200: {
        description: 'The OpenAPI 3.1 document of this service',
        content: { 'application/json': { schema: { type: 'object' } } },
      },
    },
  },
  '/docs': {
    tags: ['operations'],
    summary: 'This document in Swagger UI',
    response: { 200: text('text/html', 'The Swagger UI page') },
  },
  '/console': {
    tags: ['operations'],
    summary: 'The ops console (the page holds no data; its API calls carry the key typed into it)',
    response: {
      200: text('text/html', 'The console page'),
      304: { type: 'null', description: 'Unchanged since the ETag sent in If-None-Match' },
    },
  },
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

/** What each error status means on any route of this service (the route's summary says the rest). */
const ERROR_DESCRIPTIONS: Record<string, string> = {
  400: 'The request is malformed: `errors` lists each path and what is wrong with it',
  401: 'No API key, or an unknown or revoked one',
  403: "The key's role, or the orchestrator ids it is bound to, may not do this",
  404: 'No such resource',
  405: 'The path exists, but not with this method (see the Allow header)',
  409: 'Conflicts with the current state of the case',
  413: 'The body is larger than the limit',
  415: 'The body is not application/json',
  422:
    'Well-formed, but the rules of the case refuse it. An input over one of the limits Arbiter holds every input ' +
    'to has the type `urn:arbiter:problem:limit-exceeded` and the extension members `limit` (the name of the limit, ' +
    'e.g. `claims_per_result`, `manifest_bytes`), `max` (its value) and, when known, `actual` (what the input came ' +
    'to); nothing is stored',
  429:
    'Too many requests with this key, or too many unknown or revoked keys from this address: retry after ' +
    'Retry-After seconds',
  503: 'Overloaded or the database is unreachable: retry after Retry-After seconds',
}

const PROBLEM = 'application/problem+json'

function operationsOf(document: Json): [path: string, method: string, operation: Json][] {
  const paths = (document.paths ?? {}) as Record<string, Json>
  return Object.entries(paths).flatMap(([path, item]) =>
    HTTP_METHODS.filter((method) => item[method] !== undefined).map(
      (method) => [path, method, item[method] as Json] as [string, string, Json],
    ),
  )
}

/** The operations of a document, each with its `METHOD /path` key; in document order. */
export function listOperations(document: Json): { key: string; operation: Json }[] {
  return operationsOf(document).map(([path, method, operation]) => ({
    key: `${method.toUpperCase()} ${path}`,
    operation,
  }))
}

/** True when a request body's schema accepts JSON `null`, which is what an absent body is read as. */
function acceptsNull(schema: unknown): boolean {
  const s = schema as { type?: unknown; anyOf?: unknown[] } | undefined
  if (!s) return false
  if (s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null'))) return true
  return Array.isArray(s.anyOf) && s.anyOf.some(acceptsNull)
}

function finishOperation(key: string, operation: Json, operationIds: Readonly<Record<string, string>>) {
  if (operation.operationId === undefined && operationIds[key] !== undefined) {
    operation.operationId = operationIds[key]
  }
  const body = operation.requestBody as { required?: boolean; content?: Record<string, Json> } | undefined
  if (body?.content && Object.values(body.content).every((media) => acceptsNull(media.schema))) {
    body.required = false
  }
  const responses = (operation.responses ?? {}) as Record<string, Json>
  for (const [status, response] of Object.entries(responses)) {
    if (Number(status) < 400) continue
    const content = response.content as Record<string, Json> | undefined
    if (content?.['application/json']) {
      response.content = { [PROBLEM]: content['application/json'] }
    }
    if (response.description === 'Default Response' && ERROR_DESCRIPTIONS[status]) {
      response.description = ERROR_DESCRIPTIONS[status]
    }
  }
}

/** Every `#/components/schemas/<name>` a value refers to. */
function schemaRefs(value: unknown, into: Set<string>) {
  if (Array.isArray(value)) {
    for (const item of value) schemaRefs(item, into)
    return
  }
  if (typeof value !== 'object' || value === null) return
  for (const [key, member] of Object.entries(value)) {
    if (key === '$ref' && typeof member === 'string' && member.startsWith('#/components/schemas/')) {
      into.add(member.slice('#/components/schemas/'.length))
    } else schemaRefs(member, into)
  }
}

/**
 * Drops schema components nothing reachable from an operation (or a webhook) refers to: the unused half of
 * input/output pairs.
 */
function dropUnusedSchemas(document: Json) {
  const components = document.components as { schemas?: Record<string, unknown> } | undefined
  const schemas = components?.schemas
  if (!schemas) return
  const used = new Set<string>()
  schemaRefs(document.paths, used)
  schemaRefs(document.webhooks, used)
  const queue = [...used]
  while (queue.length > 0) {
    const found = new Set<string>()
    schemaRefs(schemas[queue.pop()!], found)
    for (const name of found) {
      if (!used.has(name)) {
        used.add(name)
        queue.push(name)
      }
    }
  }
  components.schemas = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)))
}

/**
 * The groups of operations of the shared routes, in the order a reader meets them after a case's life (each case
 * kind's groups, `docs.tags`, come first): what reads and audits decisions, then administration, and the service's
 * own pages last. Without a list of tags Swagger UI groups by first appearance, which put the public pages ahead
 * of the API.
 */
const SHARED_TAG_DESCRIPTIONS = {
  manifests: 'The signed decisions of every case kind: read, list, stream',
  escalations: 'HALTed cases waiting for a person (ops)',
  webhooks: 'Decisions pushed to orchestrators, signed as Standard Webhooks (admin)',
  audit: 'The verifiable audit log: records, stories, proofs, checkpoints',
  probes: 'Ground-truth probes (admin)',
  // The outcome kind's sub-agent policies, an administration resource: grouped with the others.
  policies: 'Sub-agent policies (admin)',
  keys: 'API keys (admin)',
  operations: 'Health, readiness, metrics, this document, the console',
}

/** The document's `tags`: the kinds' groups (by their `tagOrder`, then in the kinds' order), then the shared ones. */
export function documentTags(kinds: readonly CaseKindModule[]): { name: string; description: string }[] {
  const rank = (kind: CaseKindModule) => kind.docs.tagOrder ?? Number.MAX_SAFE_INTEGER
  const byOrder = [...kinds].sort((x, y) => rank(x) - rank(y))
  return [...byOrder.map((kind) => kind.docs.tags), SHARED_TAG_DESCRIPTIONS].flatMap((tags) =>
    Object.entries(tags).map(([name, description]) => ({ name, description })),
  )
}

/**
 * The finishing pass over the generated document (it changes the object it is given and returns it): each
 * operation gets its `operationId`; a request body whose schema accepts null is optional; error answers are
 * `application/problem+json` with a description of what the status means; what Arbiter sends to webhooks is
 * described under `webhooks`; unused schema components go.
 */
export function finishOpenApiDocument<T extends object>(document: T, kinds: readonly CaseKindModule[]): T {
  const operationIds = operationIdsOf(kinds)
  for (const { key, operation } of listOperations(document as Json))
    finishOperation(key, operation, operationIds)
  const components = (document as Json).components as { schemas?: Record<string, Json> } | undefined
  // The converter writes a component used in requests apart from its answers' one, under `<id>Input`.
  for (const id of [JSON_VALUE_ID, `${JSON_VALUE_ID}Input`])
    withJsonValueDefinition(components?.schemas, id, `#/components/schemas/${id}`)
  const webhooks = webhooksSection(components?.schemas)
  if (webhooks) (document as Json).webhooks = webhooks
  dropUnusedSchemas(document as Json)
  return ordered(document as Json, documentTags(kinds)) as T
}

/**
 * The document with `tags` right after `info`, where readers and tools expect it, and `webhooks` right after
 * `paths`.
 */
function ordered(document: Json, tags: readonly Json[]): Json {
  const result: Json = {}
  for (const [key, value] of Object.entries(document)) {
    if (key === 'tags' || key === 'webhooks') continue
    result[key] = value
    if (key === 'info') result['tags'] = tags
    if (key === 'paths' && document.webhooks !== undefined) result['webhooks'] = document.webhooks
  }
  return result
}
