import type { Dispatcher } from 'undici'
import { sha256 } from '../domain/shared/canonical-json.ts'
import { inSpan } from '../tracing/spans.ts'
import type { ProbeDefinition, ProbeResult } from './probe-definition.ts'
import { isReservedEnvName, RESERVED_ENV_NAMES } from './probe-environment.ts'
import {
  checkRequestUrl,
  createGuardedDispatcher,
  loadUndici,
  SsrfBlockedError,
  type SsrfPolicy,
} from './ssrf-guard.ts'
import { renderProbeUrl, validateProbeTemplate } from './url-template.ts'

/**
 * Executes one ground-truth probe and returns the object
 * the manifest's `ground_truth_arbiter_predicate` holds. Never throws for anything the
 * probe's server or network does: every failure is a record with `error` set.
 *
 * An error's `detail` is written for the admin and read by anyone who can read a manifest: it names the
 * pointer, the status, a length or a type, never a value from the response body, and never anything
 * derived from a header secret. The secrets are scrubbed from every detail on top of that, in every
 * spelling, in case a network library's message ever quotes what it was sent.
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
  | 'secret_missing'

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
  /** Response body cap; default 1 MiB. */
  maxResponseBytes?: number
  /** Base of the exponential retry backoff; default 100 ms. */
  backoffBaseMs?: number
  /** A guarded dispatcher to reuse; by default one per policy is created and cached. */
  dispatcher?: Dispatcher
}

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024
export const DEFAULT_BACKOFF_BASE_MS = 100
const MAX_BACKOFF_MS = 10_000

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

type ResolvedHeaders =
  | { ok: true; headers: Record<string, string>; secrets: string[] }
  | { ok: false; detail: string }

// What undici (and HTTP) accepts in a header value: tab, visible ASCII, space and obs-text (0x80-0xFF).
const HEADER_VALUE_CHARS = /^[\t\x20-\x7e\x80-\xff]*$/

/**
 * Reads `{env}` header values now; the values are returned as secrets to scrub from every detail. Details
 * name the variable and the header, never the value. A reserved name is refused here as well as at
 * registration, so a definition stored before the rule, or an environment passed unfiltered, cannot send
 * Arbiter's own configuration anywhere.
 */
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
    const variable = `environment variable ${value.env} for header ${name}`
    if (isReservedEnvName(value.env)) {
      return {
        ok: false,
        detail: `${variable} is reserved by Arbiter (${RESERVED_ENV_NAMES}) and never sent`,
      }
    }
    const secret = Object.hasOwn(env, value.env) ? env[value.env] : undefined
    if (secret === undefined) return { ok: false, detail: `${variable} is not set` }
    if (secret === '') return { ok: false, detail: `${variable} is empty` }
    if (!HEADER_VALUE_CHARS.test(secret)) {
      return {
        ok: false,
        detail: `${variable} holds characters an HTTP header value cannot carry (only tab, space, visible ASCII and Latin-1)`,
      }
    }
    resolved[name] = secret
    secrets.push(secret)
  }
  return { ok: true, headers: resolved, secrets }
}

/** Every spelling of a secret a text could carry: raw, JSON-escaped, URL- and form-encoded, base64 of its bytes. */
export function secretSpellings(secret: string): string[] {
  const spellings = new Set([secret, JSON.stringify(secret).slice(1, -1)])
  try {
    spellings.add(encodeURIComponent(secret))
    spellings.add(new URLSearchParams({ s: secret }).toString().slice(2))
  } catch {
    // A lone surrogate cannot be URL-encoded, so it cannot appear URL-encoded either.
  }
  for (const bytes of [Buffer.from(secret, 'utf8'), Buffer.from(secret, 'latin1')]) {
    spellings.add(bytes.toString('base64'))
    spellings.add(bytes.toString('base64url'))
  }
  // Longest first, so a spelling that contains another is replaced whole.
  return [...spellings].filter((spelling) => spelling !== '').sort((a, b) => b.length - a.length)
}

/** What a response value is, without quoting it. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'string') return `a string of ${Array.from(value).length} characters`
  if (typeof value === 'number') return 'a number'
  if (typeof value === 'boolean') return 'a boolean'
  if (Array.isArray(value)) return `an array of ${value.length} items`
  return `an object with ${Object.keys(value as object).length} keys`
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
 * A network error's message may carry text from outside (a host name, a resolver's answer): it is stored as
 * jsonb and hashed with JCS, both of which refuse lone surrogates. Replace them, so no record is unstorable.
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
    const response = await loadUndici().request(url, {
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

export function runProbe(
  probe: ProbeVersion,
  params: Record<string, unknown>,
  /** The outcome being decided; null for a dry run that names none. */
  outcome: { subagent_id: string; run_id: string } | null,
  options: ProbeRunOptions,
): Promise<{ record: GroundTruthRecord; durationMs: number }> {
  return inSpan(
    'arbiter.probe',
    { 'arbiter.probe.id': probe.probe_id, 'arbiter.probe.version': probe.version },
    async (span) => {
      const run = await runProbeUntraced(probe, params, outcome, options)
      const { record } = run
      span.setAttributes({
        'arbiter.probe.attempts': record.attempts,
        ...(record.http_status === null ? {} : { 'http.response.status_code': record.http_status }),
      })
      // The code only: a failure's detail may quote what the target answered.
      if (record.error !== null) span.fail(record.error.code)
      return run
    },
  )
}

async function runProbeUntraced(
  probe: ProbeVersion,
  params: Record<string, unknown>,
  outcome: { subagent_id: string; run_id: string } | null,
  options: ProbeRunOptions,
): Promise<{ record: GroundTruthRecord; durationMs: number }> {
  const started = performance.now()
  const executedAt = (options.now ?? (() => new Date()))().toISOString()
  const definition = probe.definition
  const request = prepareRequest(definition, params, outcome, options)
  let attempts = 0
  let fields: RecordFields
  if (request.ok) {
    const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    const sent = await sendWithRetries(request, definition, maxBytes, options)
    attempts = sent.attempts
    fields = judgeAnswer(sent.last, definition.predicate, maxBytes)
  } else {
    fields = request.refused
  }
  // Env-sourced header values never leave this function. Details never quote a response or a secret; this
  // scrub is the second line, for text a library wrote (and it runs before any truncation, so no prefix of
  // a secret survives).
  const scrub = (text: string) =>
    request.spellings.reduce((out, spelling) => out.replaceAll(spelling, '[redacted]'), text)
  return {
    record: {
      probe_id: probe.probe_id,
      probe_version: probe.version,
      probe_digest: probe.probe_digest,
      request: { method: definition.request.method, url: request.url },
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
  }
}

/** What a run found, before its details are scrubbed: the answer's status and digest, and its result or error. */
type RecordFields = Pick<GroundTruthRecord, 'http_status' | 'response_digest' | 'result'> & {
  error: { code: ProbeErrorCode; detail: string } | null
}

function failed(
  code: ProbeErrorCode,
  detail: string,
  httpStatus: number | null = null,
  digest: string | null = null,
): RecordFields {
  return { http_status: httpStatus, response_digest: digest, result: null, error: { code, detail } }
}

/**
 * The request a probe sends, or why it is not sent; either way the url recorded (the template until it is
 * rendered) and every spelling of the secrets its headers read, to scrub from details.
 */
type PreparedRequest = { url: string; spellings: string[] } & (
  | { ok: true; target: URL; headers: Record<string, string> }
  | { ok: false; refused: RecordFields }
)

function prepareRequest(
  definition: ProbeDefinition,
  params: Record<string, unknown>,
  outcome: { subagent_id: string; run_id: string } | null,
  options: ProbeRunOptions,
): PreparedRequest {
  const template = definition.request.url
  // A definition stored before templates were confined to path and query must not run as it was written.
  const unsafeTemplate = validateProbeTemplate(template)
  if (unsafeTemplate !== null) {
    const detail = `probe url refused: ${unsafeTemplate}; replace the definition (PUT)`
    return { ok: false, url: template, spellings: [], refused: failed('ssrf_blocked', detail) }
  }
  const rendered = renderProbeUrl(template, params, outcome)
  if (!rendered.ok) {
    return { ok: false, url: template, spellings: [], refused: failed(rendered.code, rendered.detail) }
  }
  const url = rendered.url
  const headers = resolveHeaders(definition.request.headers, options.env)
  if (!headers.ok) return { ok: false, url, spellings: [], refused: failed('secret_missing', headers.detail) }
  const spellings = headers.secrets.flatMap(secretSpellings).sort((a, b) => b.length - a.length)
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return { ok: false, url, spellings, refused: failed('ssrf_blocked', 'rendered url is not a valid url') }
  }
  const refusal = checkRequestUrl(target, options.policy)
  if (refusal !== null) return { ok: false, url, spellings, refused: failed('ssrf_blocked', refusal) }
  return { ok: true, url, spellings, target, headers: headers.headers }
}

/**
 * Sends the request, again (after a backoff) while its answer is worth retrying, up to the definition's retries:
 * the last answer, and the attempts that count (those that tried to connect).
 */
async function sendWithRetries(
  request: { target: URL; headers: Record<string, string> },
  definition: ProbeDefinition,
  maxBytes: number,
  options: ProbeRunOptions,
): Promise<{ last: AttemptOutcome | undefined; attempts: number }> {
  const dispatcher = options.dispatcher ?? dispatcherFor(options.policy)
  const backoffBase = options.backoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS
  const method = definition.request.method
  let attempts = 0
  let last: AttemptOutcome | undefined
  for (let attempt = 1; attempt <= 1 + definition.retries; attempt++) {
    if (attempt > 1)
      await new Promise((resolve) => setTimeout(resolve, backoffDelayMs(attempt - 1, backoffBase)))
    last = await attemptOnce(
      request.target,
      method,
      request.headers,
      definition.timeout_ms,
      maxBytes,
      dispatcher,
    )
    // An attempt counts once a connection was attempted; a refusal before connecting does not.
    if (!(last.kind === 'error' && last.code === 'ssrf_blocked' && !last.connected)) attempts++
    if (!isRetryable(last, definition.predicate.status)) break
  }
  return { last, attempts }
}

/** The last answer read by the predicate: its result, or why there is none. */
function judgeAnswer(
  last: AttemptOutcome | undefined,
  predicate: ProbeDefinition['predicate'],
  maxBytes: number,
): RecordFields {
  if (last === undefined) return failed('network', 'no attempt was made')
  if (last.kind === 'error') return failed(last.code, last.detail, last.status)
  if (last.kind === 'too_large') {
    return failed('response_too_large', `response body exceeds ${maxBytes} bytes`, last.status)
  }
  const { status, body } = last
  const digest = sha256(body)
  if (status >= 300 && status < 400) {
    return failed('redirect', `server answered ${status}; redirects are not followed`, status, digest)
  }
  if (status !== predicate.status) {
    return failed('status_mismatch', `expected status ${predicate.status}, got ${status}`, status, digest)
  }
  let document: unknown
  try {
    document = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body))
  } catch {
    return failed('invalid_json', 'response body is not valid JSON', status, digest)
  }
  const pointer = predicate.pointer
  const value = resolveJsonPointer(document, pointer)
  if (value === undefined) {
    return failed('pointer_missing', `pointer '${pointer}' not found in response`, status, digest)
  }
  const key =
    typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : null
  const map = predicate.map
  if (key === null || !Object.hasOwn(map, key)) {
    return failed(
      'unmapped_value',
      `the value at '${pointer}' (${describeValue(value)}) has no entry in the map`,
      status,
      digest,
    )
  }
  return { http_status: status, response_digest: digest, result: map[key] ?? null, error: null }
}
