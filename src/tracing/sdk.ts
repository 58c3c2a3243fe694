import { context, SpanStatusCode, trace } from '@opentelemetry/api'
import { getRPCMetadata, RPCType } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { registerInstrumentations } from '@opentelemetry/instrumentation'
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici'
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import type { TracingConfig } from '../config.ts'
import { type ArbiterSpan, installTracing, type SpanAttributes } from './spans.ts'

/**
 * Starts OpenTelemetry: a tracer provider exporting over OTLP/HTTP (JSON) to the configured endpoint, W3C Trace
 * Context propagation, and OpenTelemetry's own instrumentation of the HTTP server, PostgreSQL statements and
 * undici requests (probe calls carry `traceparent` onward). Imported only when tracing is configured, and before
 * `pg` or the HTTP app is loaded: the pg and http instrumentations patch those modules as they are required.
 *
 * The endpoint and service name come from Config; the SDK reads the other standard OTEL_* variables itself
 * (sampler, resource attributes, exporter headers and timeouts, batch sizes), as every OpenTelemetry SDK does.
 */
export function startTracing(config: TracingConfig): { shutdown: () => Promise<void> } {
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(resourceFromAttributes({ 'service.name': config.serviceName }))
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: config.tracesEndpoint }))],
  })
  // Sets the AsyncLocalStorage context manager and the W3C `traceparent`/`tracestate` propagator.
  provider.register()

  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation(),
      // Only statements inside a span (a request, a sequencer batch): the sequencer's idle polls are not traced.
      // Statement texts are recorded, their parameters never (enhancedDatabaseReporting stays off).
      new PgInstrumentation({ requireParentSpan: true, enhancedDatabaseReporting: false }),
      new UndiciInstrumentation({
        // A probe's query string may carry values an outcome supplied: the span keeps the URL without it.
        requestHook: (span, request) => {
          const url = new URL(request.path, request.origin)
          span.setAttribute('url.full', `${url.origin}${url.pathname}`)
          span.setAttribute('url.query', '')
        },
      }),
    ],
  })
  const tracer = provider.getTracer('arbiter')
  installTracing({
    inSpan<T>(name: string, attributes: SpanAttributes, fn: (span: ArbiterSpan) => Promise<T>): Promise<T> {
      return tracer.startActiveSpan(name, { attributes }, async (span) => {
        const handle: ArbiterSpan = {
          recording: span.isRecording(),
          setAttributes: (more) => void span.setAttributes(more),
          fail: (code) => {
            span.setAttribute('error.type', code)
            span.setStatus({ code: SpanStatusCode.ERROR })
          },
        }
        try {
          return await fn(handle)
        } catch (err) {
          const code = (err as { code?: unknown }).code
          handle.fail(typeof code === 'string' ? code : err instanceof Error ? err.name : 'error')
          throw err
        } finally {
          span.end()
        }
      })
    },
    logIds() {
      const span = trace.getSpan(context.active())
      if (span === undefined) return undefined
      const { traceId, spanId } = span.spanContext()
      return { trace_id: traceId, span_id: spanId }
    },
    nameRoute(route: string) {
      const metadata = getRPCMetadata(context.active())
      if (metadata?.type === RPCType.HTTP) metadata.route = route
    },
  })

  return {
    shutdown: async () => {
      installTracing(undefined)
      unregister()
      await provider.shutdown()
    },
  }
}
