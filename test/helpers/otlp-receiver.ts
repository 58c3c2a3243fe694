import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'

/** One exported span, decoded from OTLP/HTTP JSON: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  status: { code?: number }
  attributes: Record<string, string | number | boolean>
}

interface OtlpValue {
  stringValue?: string
  intValue?: string | number
  doubleValue?: number
  boolValue?: boolean
}

interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: OtlpValue }[] }
    scopeSpans?: {
      spans?: (Omit<ReceivedSpan, 'attributes' | 'parentSpanId'> & {
        parentSpanId?: string
        attributes?: { key: string; value: OtlpValue }[]
      })[]
    }[]
  }[]
}

function plain(value: OtlpValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.boolValue !== undefined) return value.boolValue
  return JSON.stringify(value)
}

function attributesOf(list: { key: string; value: OtlpValue }[] = []): ReceivedSpan['attributes'] {
  return Object.fromEntries(list.map(({ key, value }) => [key, plain(value)]))
}

/**
 * A real OTLP/HTTP traces receiver (what a collector listens with on 4318), for the JSON encoding the service's
 * exporter sends. It keeps every request body as received, and the spans decoded from them.
 */
export async function startOtlpReceiver(t: Pick<TestContext, 'after'>) {
  const bodies: string[] = []
  const spans: ReceivedSpan[] = []
  const resources: Record<string, string | number | boolean>[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      bodies.push(`${req.method} ${req.url} ${req.headers['content-type']} ${body}`)
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        const exported = JSON.parse(body) as OtlpExport
        for (const resourceSpans of exported.resourceSpans ?? []) {
          resources.push(attributesOf(resourceSpans.resource?.attributes))
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? '',
                name: span.name,
                kind: span.kind,
                status: span.status ?? {},
                attributes: attributesOf(span.attributes),
              })
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    /** Every request received, as `METHOD url content-type body`. */
    bodies,
    spans,
    resources,
    /** Waits until `done(spans)` holds (or throws after `timeoutMs`). */
    async waitFor(done: (spans: ReceivedSpan[]) => boolean, timeoutMs = 15_000): Promise<void> {
      const until = Date.now() + timeoutMs
      while (!done(spans)) {
        if (Date.now() > until) {
          throw new Error(`spans never arrived; got: ${spans.map((s) => s.name).join(', ')}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
  }
}
