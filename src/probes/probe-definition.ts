import { z } from 'zod'
import { OUTCOME_READINGS, type OutcomeReading } from '../domain/outcome/vocabulary.ts'
import { isReservedEnvName, RESERVED_ENV_NAMES } from './probe-environment.ts'
import { validateProbeTemplate } from './url-template.ts'

/**
 * A ground-truth probe as an admin submits it.
 * Every level is strict: an unknown field is a validation error, not silently dropped,
 * so a typo such as `timeout` instead of `timeout_ms` cannot register a probe with defaults.
 */

/** What a probe's response maps to: an outcome reading (the vocabulary is the outcome domain's). */
export const PROBE_RESULTS = OUTCOME_READINGS
export type ProbeResult = OutcomeReading

export const PROBE_METHODS = ['GET', 'HEAD', 'POST'] as const
export type ProbeMethod = (typeof PROBE_METHODS)[number]

export const DEFAULT_TIMEOUT_MS = 2000
export const DEFAULT_RETRIES = 0

// RFC 9110 §5.6.2 token: the only characters a header name may hold.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// Headers that decide framing or routing are undici's (or the SSRF guard's) business:
// `host` would let a probe talk to another virtual host on a vetted address, and the
// framing headers make undici throw at call time instead of failing registration.
const FORBIDDEN_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-connection',
])
// A header value may not smuggle a second header or request (CR, LF, NUL).
const HEADER_VALUE = /^[^\r\n\0]*$/
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
// RFC 6901: '' (whole document) or '/'-prefixed tokens where '~' is only '~0' or '~1'.
const JSON_POINTER = /^(\/([^~]|~[01])*)*$/

// zod writes record entries by assignment, so a `__proto__` key would vanish silently;
// refuse it instead of registering a map that cannot match what was submitted.
const notProto = (key: string) => key !== '__proto__'

const headerName = z
  .string()
  .regex(HEADER_NAME, 'header name must be an HTTP token')
  .refine(notProto, 'header name must not be __proto__')
  .refine((name) => !FORBIDDEN_HEADERS.has(name.toLowerCase()), 'this header is set by Arbiter, not a probe')

const headerValue = z.union([
  z
    .string()
    .regex(HEADER_VALUE, 'header value must not contain CR, LF or NUL')
    // Header values are sent as written: a value an outcome could fill would let it choose what a secret
    // travels with (and `{{` would reach the target literally, which is never what was meant).
    .refine(
      (value) => !value.includes('{{'),
      "templates are allowed only in the url's path and query, not in headers",
    ),
  z.strictObject({
    env: z
      .string()
      .regex(ENV_NAME, 'env must be an environment variable name')
      .refine(
        (name) => !isReservedEnvName(name),
        `env names a variable Arbiter reserves (${RESERVED_ENV_NAMES}): its own configuration and database credentials are never sent to a probe target`,
      ),
  }),
])

export const probeDefinitionSchema = z.strictObject({
  name: z.string().min(1).max(200),
  request: z.strictObject({
    method: z.enum(PROBE_METHODS).optional(),
    url: z
      .string()
      .min(1)
      .max(8192)
      .superRefine((url, ctx) => {
        const reason = validateProbeTemplate(url)
        if (reason !== null) ctx.addIssue({ code: 'custom', message: reason })
      }),
    headers: z.record(headerName, headerValue).optional(),
  }),
  timeout_ms: z.int().min(1).max(60_000).optional(),
  retries: z.int().min(0).max(5).optional(),
  predicate: z.strictObject({
    status: z.int().min(100).max(599),
    pointer: z
      .string()
      .regex(JSON_POINTER, "pointer must be an RFC 6901 JSON Pointer ('' or starting with '/')"),
    map: z
      .record(z.string().refine(notProto, 'map key must not be __proto__'), z.enum(PROBE_RESULTS))
      .refine((map) => Object.keys(map).length > 0, 'map needs at least one entry'),
  }),
})

export type ProbeDefinitionInput = z.infer<typeof probeDefinitionSchema>
export type ProbeHeaderValue = string | { env: string }

/** The stored form: defaults filled in, so `probe_digest = hashJson(definition)` is stable. */
export interface ProbeDefinition {
  name: string
  request: { method: ProbeMethod; url: string; headers: Record<string, ProbeHeaderValue> }
  timeout_ms: number
  retries: number
  predicate: { status: number; pointer: string; map: Record<string, ProbeResult> }
}

/**
 * Parses a submitted definition (throws `z.ZodError` when invalid, including a bad URL
 * template) and returns it with defaults filled in. The SSRF registration check needs
 * the deployment's policy, so the caller runs `checkRegistrationUrl` separately.
 */
export function normalizeProbeDefinition(input: unknown): ProbeDefinition {
  const parsed = probeDefinitionSchema.parse(input)
  return {
    name: parsed.name,
    request: {
      method: parsed.request.method ?? 'GET',
      url: parsed.request.url,
      headers: Object.fromEntries(
        Object.entries(parsed.request.headers ?? {}).map(([k, v]) => [
          k,
          typeof v === 'string' ? v : { env: v.env },
        ]),
      ),
    },
    timeout_ms: parsed.timeout_ms ?? DEFAULT_TIMEOUT_MS,
    retries: parsed.retries ?? DEFAULT_RETRIES,
    predicate: {
      status: parsed.predicate.status,
      pointer: parsed.predicate.pointer,
      map: Object.fromEntries(Object.entries(parsed.predicate.map)),
    },
  }
}
