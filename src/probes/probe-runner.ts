import { type Dispatcher, request } from 'undici'
import { sha256 } from '../domain/shared/canonical-json.ts'
import {
  type ProbeDefinition,
  type ProbeResult,
  parseTemplates,
  replaceTemplates,
} from './probe-definition.ts'
import { checkRequestUrl, createGuardedDispatcher, SsrfBlockedError, type SsrfPolicy } from './ssrf-guard.ts'

/**
 * Executes one ground-truth probe (SPEC "Ground-truth probes") and returns the object
 * the manifest's `ground_truth_arbiter_predicate` holds. Never throws for anything the
 * probe's server or network does: every failure is a record with `error` set.
 */

export interface ProbeVersion {
  probe_id: string
  version: number
  probe_digest: string
  definition: ProbeDefinition
}

export type ProbeErrorCode =
  | 'timeout'
  | 'network'
  | 'status_mismatch'
  | 'pointer_missing'
  | 'unmapped_value'
  | 'invalid_json'
  | 'response_too_large'
  | 'redirect'
  | 'ssrf_blocked'
  | 'param_missing'

export interface GroundTruthRecord {
  probe_id: string
  probe_version: number
  probe_digest: string
  request: { method: string; url: string }
  executed_at: string
  attempts: number
  http_status: number | null
  response_digest: string | null
  result: ProbeResult | null
  error: { code: ProbeErrorCode; detail: string } | null
}

export interface ProbeRunOptions {
  policy: SsrfPolicy
  /** Where `{env: NAME}` header values come from; pass only what probes may read. */
  env: Record<string, string | undefined>
  now?: () => Date
  /** Response body cap; default 1 MiB (SPEC). */
  maxResponseBytes?: number
  /** Base of the exponential retry backoff; default 100 ms. */
  backoffBaseMs?: number
  /** A guarded dispatcher to reuse; by default one per policy is created and cached. */
  dispatcher?: Dispatcher
}

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024
export const DEFAULT_BACKOFF_BASE_MS = 100
const MAX_BACKOFF_MS = 10_000
const MAX_DETAIL_VALUE_CHARS = 64

// One Agent per distinct policy, so keep-alive connections (each vetted when opened)
// are shared between executions instead of a new pool per probe run.
const dispatchers = new Map<string, Dispatcher>()

function dispatcherFor(policy: SsrfPolicy): Dispatcher {
  const key = JSON.stringify([policy.allowPrivate, [...policy.allowedHosts].sort()])
  let dispatcher = dispatchers.get(key)
  if (dispatcher === undefined) {
    dispatcher = createGuardedDispatcher({
      allowedHosts: [...policy.allowedHosts],
      allowPrivate: policy.allowPrivate,
    })
    dispatchers.set(key, dispatcher)
  }
  return dispatcher
}

/**
 * Exponential backoff with "equal jitter": the n-th retry waits between half and all
 * of `base * 2^(n-1)` (capped at 10 s), so retries from many replicas do not align.
 */
export function backoffDelayMs(
  retryNumber: number,
  baseMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(baseMs * 2 ** (retryNumber - 1), MAX_BACKOFF_MS)
  return ceiling / 2 + (random() * ceiling) / 2
}

type Rendered = { ok: true; url: string } | { ok: false; detail: string }

function scalarText(value: unknown): string | null {
  if (typeof value === 'string') return value
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null
  if (typeof value === 'boolean') return String(value)
  return null
}

/**
 * Fills `{{params.x}}`, `{{outcome.subagent_id}}` and `{{outcome.run_id}}`, each value
 * URL-encoded with encodeURIComponent (so a value can never add a path segment, query
 * or host part). Strings, finite numbers and booleans only; anything else is missing.
 */
export function renderProbeUrl(
  template: string,
  params: Record<string, unknown>,
  outcome: { subagent_id: string; run_id: string } | null,
): Rendered {
  const templates = parseTemplates(template)
  if (templates === null)
    return { ok: false, detail: 'url template contains an expression that is not allowed' }
  for (const expr of templates) {
    if (expr.kind !== 'param') {
      // A dry run may name no outcome: then an outcome template has nothing to fill it.
      if (outcome === null) return { ok: false, detail: `outcome.${expr.field} is not given` }
      continue
    }
    if (!Object.hasOwn(params, expr.name)) return { ok: false, detail: `param ${expr.name} is missing` }
    if (scalarText(params[expr.name]) === null) {
      return { ok: false, detail: `param ${expr.name} is not a string, number or boolean` }
    }
  }
  try {
    const url = replaceTemplates(template, (expr) => {
      const value = expr.kind === 'param' ? params[expr.name] : outcome?.[expr.field]
      return encodeURIComponent(scalarText(value) ?? '')
    })
    return { ok: true, url }
  } catch {
    // encodeURIComponent throws URIError on lone surrogates.
    return { ok: false, detail: 'a template value is not valid Unicode' }
  }
}

type ResolvedHeaders =
  | { ok: true; headers: Record<string, string>; secrets: string[] }
  | { ok: false; detail: string }

/** Reads `{env}` header values now; the values are returned as secrets to scrub from every detail. */
function resolveHeaders(
  headers: ProbeDefinition['request']['headers'],
  env: Record<string, string | undefined>,
): ResolvedHeaders {
  const resolved: Record<string, string> = {}
  const secrets: string[] = []
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') {
      resolved[name] = value
      continue
    }
    const secret = Object.hasOwn(env, value.env) ? env[value.env] : undefined
    if (secret === undefined || secret === '') {
      return { ok: false, detail: `environment variable ${value.env} for header ${name} is not set` }
    }
    if (/[\r\n\0]/.test(secret)) {
      return {
        ok: false,
        detail: `environment variable ${value.env} for header ${name} is not a valid header value`,
      }
    }
    resolved[name] = secret
    secrets.push(secret)
  }
  return { ok: true, headers: resolved, secrets }
}

/** RFC 6901 evaluation; `undefined` when the pointer does not resolve. */
export function resolveJsonPointer(document: unknown, pointer: string): unknown {
  if (pointer === '') return document
  if (!pointer.startsWith('/')) return undefined
  let current: unknown = document
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (Array.isArray(current)) {
      // Array indices are decimal without leading zeros; '-' (past the end) never resolves.
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined
      const index = Number(token)
      if (index >= current.length) return undefined
      current = current[index]
    } else if (current !== null && typeof current === 'object') {
      if (!Object.hasOwn(current, token)) return undefined
      current = (current as Record<string, unknown>)[token]
    } else {
      return undefined
    }
  }
  return current
}

type AttemptOutcome =
  | { kind: 'response'; status: number; body: Buffer }
  | { kind: 'too_large'; status: number }
  | {
      kind: 'error'
      code: 'timeout' | 'network' | 'ssrf_blocked'
      detail: string
      status: number | null
      connected: boolean
    }

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])

function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return 'request failed'
  const code = (err as { code?: unknown }).code
  const text =
    typeof code === 'string' && !err.message.includes(code) ? `${code}: ${err.message}` : err.message
  return clip(text, 200)
}

/**
 * Details quote text from remote servers: it is stored as jsonb and hashed with JCS, both of which refuse lone
 * surrogates. Replace them, so no response can make a record unstorable.
 */
export function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
}

/** Shortens to `max` code points (never splitting a surrogate pair), with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  const points = Array.from(text)
  return points.length > max ? `${points.slice(0, max).join('')}…` : text
}

/**
 * One attempt, bounded as a whole by `timeoutMs` (undici's headers/body timeouts only
 * bound the gaps between bytes, so a trickling body needs the overall timer). The body
 * is read chunk by chunk and the stream destroyed as soon as it passes the cap.
 */
async function attemptOnce(
  url: URL,
  method: string,
  headers: Record<string, string>,
  timeoutMs: number,
  maxBytes: number,
  dispatcher: Dispatcher,
): Promise<AttemptOutcome> {
  const controller = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort(new Error('probe attempt timed out'))
  }, timeoutMs)
  let status: number | null = null
  const timeoutDetail = () => `no complete response within ${timeoutMs} ms`
  try {
    const response = await request(url, {
      method: method as Dispatcher.HttpMethod,
      headers,
      dispatcher,
      signal: controller.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    })
    status = response.statusCode
    const declared = Number(response.headers['content-length'])
    if (Number.isFinite(declared) && declared > maxBytes) {
      response.body.destroy()
      return { kind: 'too_large', status }
    }
    const chunks: Buffer[] = []
    let total = 0
    for await (const chunk of response.body) {
      const bytes = chunk as Buffer
      total += bytes.length
      if (total > maxBytes) {
        // Stop reading now: destroying the body aborts the request and closes the socket.
        response.body.destroy()
        return { kind: 'too_large', status }
      }
      chunks.push(bytes)
    }
    return { kind: 'response', status, body: Buffer.concat(chunks, total) }
  } catch (err) {
    if (err instanceof SsrfBlockedError) {
      return {
        kind: 'error',
        code: 'ssrf_blocked',
        detail: err.message,
        status: null,
        connected: err.connected,
      }
    }
    const code = (err as { code?: unknown }).code
    if (timedOut || (typeof code === 'string' && TIMEOUT_CODES.has(code))) {
      return { kind: 'error', code: 'timeout', detail: timeoutDetail(), status, connected: true }
    }
    return { kind: 'error', code: 'network', detail: describeNetworkError(err), status, connected: true }
  } finally {
    clearTimeout(timer)
  }
}

function isRetryable(outcome: AttemptOutcome, expectedStatus: number): boolean {
  if (outcome.kind === 'error') return outcome.code === 'timeout' || outcome.code === 'network'
  // A 5xx the predicate expects is an answer, not a failure; retrying cannot change it.
  if (outcome.kind === 'response') return outcome.status >= 500 && outcome.status !== expectedStatus
  return false
}

export async function runProbe(
  probe: ProbeVersion,
  params: Record<string, unknown>,
  /** The outcome being decided; null for a dry run that names none. */
  outcome: { subagent_id: string; run_id: string } | null,
  options: ProbeRunOptions,
): Promise<{ record: GroundTruthRecord; durationMs: number }> {
  const started = performance.now()
  const executedAt = (options.now ?? (() => new Date()))().toISOString()
  const definition = probe.definition
  const method = definition.request.method
  let recordedUrl = definition.request.url
  let attempts = 0
  let secrets: string[] = []

  // Env-sourced header values never leave this function: every detail is scrubbed
  // (scrubbing happens before any truncation, so no prefix of a secret survives).
  const scrub = (text: string) => secrets.reduce((out, secret) => out.replaceAll(secret, '[redacted]'), text)
  const finish = (
    fields: Pick<GroundTruthRecord, 'http_status' | 'response_digest' | 'result'> & {
      error: { code: ProbeErrorCode; detail: string } | null
    },
  ) => ({
    record: {
      probe_id: probe.probe_id,
      probe_version: probe.version,
      probe_digest: probe.probe_digest,
      request: { method, url: recordedUrl },
      executed_at: executedAt,
      attempts,
      http_status: fields.http_status,
      response_digest: fields.response_digest,
      result: fields.result,
      error:
        fields.error === null
          ? null
          : { code: fields.error.code, detail: wellFormed(scrub(fields.error.detail)) },
    },
    durationMs: performance.now() - started,
  })
  const fail = (
    code: ProbeErrorCode,
    detail: string,
    httpStatus: number | null = null,
    digest: string | null = null,
  ) => finish({ http_status: httpStatus, response_digest: digest, result: null, error: { code, detail } })

  const rendered = renderProbeUrl(definition.request.url, params, outcome)
  if (!rendered.ok) return fail('param_missing', rendered.detail)
  recordedUrl = rendered.url

  const headers = resolveHeaders(definition.request.headers, options.env)
  if (!headers.ok) return fail('param_missing', headers.detail)
  secrets = headers.secrets

  let target: URL
  try {
    target = new URL(rendered.url)
  } catch {
    return fail('ssrf_blocked', 'rendered url is not a valid url')
  }
  const refusal = checkRequestUrl(target, options.policy)
  if (refusal !== null) return fail('ssrf_blocked', refusal)

  const dispatcher = options.dispatcher ?? dispatcherFor(options.policy)
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
  const backoffBase = options.backoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS

  let last: AttemptOutcome | undefined
  for (let attempt = 1; attempt <= 1 + definition.retries; attempt++) {
    if (attempt > 1)
      await new Promise((resolve) => setTimeout(resolve, backoffDelayMs(attempt - 1, backoffBase)))
    last = await attemptOnce(target, method, headers.headers, definition.timeout_ms, maxBytes, dispatcher)
    // An attempt counts once a connection was attempted; a refusal before connecting does not.
    if (!(last.kind === 'error' && last.code === 'ssrf_blocked' && !last.connected)) attempts++
    if (!isRetryable(last, definition.predicate.status)) break
  }
  if (last === undefined) return fail('network', 'no attempt was made')

  if (last.kind === 'error') return fail(last.code, last.detail, last.status)
  if (last.kind === 'too_large') {
    return fail('response_too_large', `response body exceeds ${maxBytes} bytes`, last.status)
  }

  const { status, body } = last
  const digest = sha256(body)
  if (status >= 300 && status < 400) {
    return fail('redirect', `server answered ${status}; redirects are not followed`, status, digest)
  }
  if (status !== definition.predicate.status) {
    return fail(
      'status_mismatch',
      `expected status ${definition.predicate.status}, got ${status}`,
      status,
      digest,
    )
  }

  let document: unknown
  try {
    document = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body))
  } catch {
    return fail('invalid_json', 'response body is not valid JSON', status, digest)
  }

  const pointer = definition.predicate.pointer
  const value = resolveJsonPointer(document, pointer)
  if (value === undefined) {
    return fail('pointer_missing', `pointer '${pointer}' not found in response`, status, digest)
  }
  const key =
    typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : null
  const map = definition.predicate.map
  if (key === null || !Object.hasOwn(map, key)) {
    // Scrub first, then shorten: a server echoing a header back must not leak even a prefix.
    const shown = clip(scrub(JSON.stringify(value) ?? String(value)), MAX_DETAIL_VALUE_CHARS)
    return fail('unmapped_value', `value ${shown} at '${pointer}' has no entry in the map`, status, digest)
  }
  return finish({ http_status: status, response_digest: digest, result: map[key] ?? null, error: null })
}
