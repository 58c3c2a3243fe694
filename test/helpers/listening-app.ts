import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import { buildTestApp, type TestApp, type TestAppOptions } from './app.ts'

export interface ListeningApp extends TestApp {
  /** `http://127.0.0.1:<port>`: where a client, an example or a child process reaches this Arbiter. */
  baseUrl: string
}

/**
 * The real service (buildApp on its own database: PostgreSQL at TEST_DATABASE_URL, else the embedded one) on a
 * loopback port, for code that talks to Arbiter over HTTP as it would in production. Closed with the test (or the
 * suite, given node:test's suite-level `after`).
 */
export async function listenTestApp(
  t: { after(fn: () => Promise<void>): void },
  options: TestAppOptions = {},
): Promise<ListeningApp> {
  const testApp = await buildTestApp(t as unknown as Pick<TestContext, 'after'>, options)
  await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = testApp.app.server.address() as AddressInfo
  return { ...testApp, baseUrl: `http://127.0.0.1:${port}` }
}
