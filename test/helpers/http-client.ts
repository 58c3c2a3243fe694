import { Agent, request } from 'undici'

export interface HttpAnswer {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  // biome-ignore lint/suspicious/noExplicitAny: answers are JSON the tests inspect field by field
  json: any
}

/**
 * A small JSON client over real sockets (undici) for tests that run the service as a process. Network
 * failures throw; every HTTP answer, whatever its status, resolves.
 */
export function httpClient(baseUrl: string, options: { connections?: number; timeoutMs?: number } = {}) {
  const agent = new Agent({
    connections: options.connections ?? 64,
    keepAliveTimeout: 2_000,
    headersTimeout: options.timeoutMs ?? 20_000,
    bodyTimeout: options.timeoutMs ?? 20_000,
  })
  let inFlight = 0
  return {
    get inFlight() {
      return inFlight
    },
    async call(
      method: string,
      path: string,
      key: string | null,
      body?: unknown,
      extraHeaders: Record<string, string> = {},
    ): Promise<HttpAnswer> {
      inFlight += 1
      try {
        const response = await request(`${baseUrl}${path}`, {
          method: method as 'GET',
          dispatcher: agent,
          headers: {
            ...(key ? { authorization: `Bearer ${key}` } : {}),
            ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
            ...extraHeaders,
          },
          body: body !== undefined ? JSON.stringify(body) : null,
        })
        const text = await response.body.text()
        let json: unknown
        try {
          json = text ? JSON.parse(text) : undefined
        } catch {
          json = undefined
        }
        return { status: response.statusCode, headers: response.headers, text, json }
      } finally {
        inFlight -= 1
      }
    },
    close: () => agent.close(),
  }
}

export type HttpClient = ReturnType<typeof httpClient>
