/**
 * Arbiter's own spans (a decision, a signature, a probe run, a sequencer batch), and the trace ids a log line
 * carries. Nothing here imports OpenTelemetry: with tracing off (no exporter configured) every helper is one
 * check of a variable and a direct call, and no OpenTelemetry module is ever loaded. `./sdk.ts`, imported only
 * when tracing is on, installs the implementation.
 *
 * Attributes are ids, kinds, verdicts, sizes and codes: never a secret, an evidence text or a request body.
 */

export type SpanAttributes = Record<string, string | number | boolean>

/** A span in progress, as the code it measures sees it. */
export interface ArbiterSpan {
  /** False when the span is not sampled (or tracing is off): skip work done only to compute attributes. */
  readonly recording: boolean
  setAttributes(attributes: SpanAttributes): void
  /** Marks the span failed, with a code (`error.type`), never an error's message. */
  fail(code: string): void
}

/** What `./sdk.ts` provides once tracing is on. */
export interface Tracing {
  inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: ArbiterSpan) => Promise<T>): Promise<T>
  /** `trace_id` and `span_id` of the active span, for a log line; undefined outside any span. */
  logIds(): { trace_id: string; span_id: string } | undefined
  /** Names the current HTTP server span after the route template (`POST /v1/outcomes/:id/evaluate`). */
  nameRoute(route: string): void
}

const NO_SPAN: ArbiterSpan = {
  recording: false,
  setAttributes: () => undefined,
  fail: () => undefined,
}

let active: Tracing | undefined

/** Called by `./sdk.ts` when tracing starts (and with undefined when it stops). */
export function installTracing(tracing: Tracing | undefined): void {
  active = tracing
}

export function tracingOn(): boolean {
  return active !== undefined
}

/** Runs `fn` inside a span named `name` (the span ends when `fn` settles; a throw marks it failed). */
export function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: (span: ArbiterSpan) => Promise<T>,
): Promise<T> {
  return active === undefined ? fn(NO_SPAN) : active.inSpan(name, attributes, fn)
}

/** For pino's `mixin`: the active span's ids, or nothing. */
export function traceLogFields(): Record<string, string> {
  return active?.logIds() ?? {}
}

export function nameRoute(route: string): void {
  active?.nameRoute(route)
}
