import { readFileSync } from 'node:fs'
import { type ArbiterClient, ArbiterError, createArbiterClient } from '@arbiter/client'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { createArbiterMcpServer } from './server.ts'

export const MCP_USAGE = `usage: npm run --silent arbiter -- mcp     (or: node dist/cli.js mcp)

Serves the Model Context Protocol over stdio so that agents call Arbiter as tools: record_outcome,
submit_interpretation, evaluate_outcome, get_manifest, verify_manifest, create_fanout, submit_worker_result,
reconcile_fanout, create_review, submit_verdict, decide_review, list_escalations.

  ARBITER_URL       where the Arbiter service listens, e.g. http://127.0.0.1:8080 (required)
  ARBITER_API_KEY   the API key the tools call with; its role decides which tools succeed (required)

stdout carries the protocol only; diagnostics go to stderr. The server stops when stdin closes.`

export interface McpCommandIo {
  stdin: NodeJS.ReadableStream
  stdout: NodeJS.WritableStream
  err: (text: string) => void
}

function packageVersion(): string {
  try {
    const url = new URL('../../package.json', import.meta.url)
    return (JSON.parse(readFileSync(url, 'utf8')) as { version?: string }).version ?? '0.0.0'
  } catch {
    return '0.0.0'
  }
}

/** How long the check of the key at start may take, in all. */
const KEY_CHECK_TIMEOUT_MS = 10_000

/**
 * The key, checked once before serving: a key the service refuses would otherwise fail every tool call, one by
 * one, far from the configuration that is wrong. Any role may list manifests, so a 401 is the key itself (unknown
 * or revoked). Returns the line to print and exit 2 with, or null when the key works.
 */
export async function checkApiKey(client: ArbiterClient, origin: string): Promise<string | null> {
  try {
    await client.manifests.list({ limit: '1' }, { timeoutMs: KEY_CHECK_TIMEOUT_MS, maxAttempts: 1 })
    return null
  } catch (err) {
    if (err instanceof ArbiterError && err.status === 401)
      return `arbiter mcp: ${origin} refused ARBITER_API_KEY (401: ${err.detail}): give a key it knows, e.g. from \`arbiter keys create\``
    if (err instanceof ArbiterError)
      return `arbiter mcp: could not check ARBITER_API_KEY at ${origin}: it answered ${err.status} (${err.detail})`
    return `arbiter mcp: cannot reach Arbiter at ${origin} to check ARBITER_API_KEY: ${(err as Error).message}`
  }
}

/**
 * `arbiter mcp`: checks ARBITER_URL and ARBITER_API_KEY (exit 2 when either is missing, the URL is not http(s), or
 * the service there refuses the key or cannot be reached), then serves until stdin ends. Resolves with the exit
 * code.
 */
export async function runMcpCommand(
  args: string[],
  env: NodeJS.ProcessEnv,
  { stdin, stdout, err }: McpCommandIo,
): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    stdout.write(`${MCP_USAGE}\n`)
    return 0
  }
  if (args.length > 0) {
    err(`arbiter mcp: unexpected argument ${args[0]}\n\n${MCP_USAGE}\n`)
    return 2
  }
  const url = env.ARBITER_URL?.trim()
  const apiKey = env.ARBITER_API_KEY?.trim()
  if (!url) {
    err(
      'arbiter mcp: ARBITER_URL is not set: give the URL of the Arbiter service, e.g. http://127.0.0.1:8080\n',
    )
    return 2
  }
  let baseUrl: URL
  try {
    baseUrl = new URL(url)
    if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') throw new Error('not http(s)')
  } catch {
    err(`arbiter mcp: ARBITER_URL is not an http(s) URL: ${JSON.stringify(url)}\n`)
    return 2
  }
  if (!apiKey) {
    err('arbiter mcp: ARBITER_API_KEY is not set: give an API key (e.g. from `arbiter keys create`)\n')
    return 2
  }

  const client = createArbiterClient({ baseUrl, apiKey })
  const refused = await checkApiKey(client, baseUrl.origin)
  if (refused) {
    err(`${refused}\n`)
    return 2
  }
  const server = createArbiterMcpServer(client, packageVersion())
  server.onerror = (error) => err(`arbiter mcp: ${error.message}\n`)
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve
  })
  const transport = new StdioServerTransport(
    stdin as ConstructorParameters<typeof StdioServerTransport>[0],
    stdout as ConstructorParameters<typeof StdioServerTransport>[1],
  )
  // The transport does not watch for the end of its input: the host closing our stdin is how it says goodbye.
  stdin.once('end', () => void server.close())
  await server.connect(transport)
  err(`arbiter mcp: serving ${baseUrl.origin} over stdio\n`)
  await closed
  return 0
}
