import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import { buildTestApp, type TestApp, type TestAppOptions } from '../../../../test/helpers/app.ts'
import { type ArbiterClient, type ArbiterClientOptions, createArbiterClient } from '../../src/index.ts'

export interface LiveArbiter extends TestApp {
  baseUrl: string
  /** A client of this Arbiter with the given key. */
  client(apiKey: string | undefined, options?: Partial<ArbiterClientOptions>): ArbiterClient
}

/**
 * The real service (buildApp on its own database: PostgreSQL at TEST_DATABASE_URL, else the embedded one) listening
 * on a loopback port, so the client talks HTTP to it exactly as it would in production.
 */
export async function startLiveArbiter(
  t: { after(fn: () => Promise<void>): void },
  options: TestAppOptions = {},
): Promise<LiveArbiter> {
  // A test's `t.after` or node:test's suite-level `after`: the app only ever registers a context-free cleanup.
  const testApp = await buildTestApp(t as unknown as Pick<TestContext, 'after'>, options)
  await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = testApp.app.server.address() as AddressInfo
  const baseUrl = `http://127.0.0.1:${port}`
  return {
    ...testApp,
    baseUrl,
    client: (apiKey, clientOptions = {}) =>
      createArbiterClient({ baseUrl, ...(apiKey === undefined ? {} : { apiKey }), ...clientOptions }),
  }
}

export const EVIDENCE = [
  { kind: 'result_payload' as const, name: 'result', content: { refund_id: 're_1', status: 'ok' } },
  { kind: 'exit_code' as const, content: 0 },
]
