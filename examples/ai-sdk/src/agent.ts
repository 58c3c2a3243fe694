/**
 * An agent on the Vercel AI SDK that settles a sub-agent's outcome through Arbiter. Arbiter's tools come from its
 * MCP server (`arbiter mcp`, over stdio) through the AI SDK's MCP client; the model drives them in the SDK's
 * ordinary tool loop (`generateText` with `stopWhen`).
 */
import { createMCPClient } from '@ai-sdk/mcp'
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio'
import { generateText, type LanguageModel, stepCountIs } from 'ai'

export interface AgentOptions {
  model: LanguageModel
  /** How to start Arbiter's MCP server, e.g. `{command: 'npx', args: ['arbiter', 'mcp']}`. */
  server: { command: string; args: string[] }
  arbiterUrl: string
  /** The key the tools call Arbiter with (an orchestrator key for recording, interpreting and evaluating). */
  apiKey: string
  prompt: string
}

export async function runAgent(options: AgentOptions) {
  const mcp = await createMCPClient({
    transport: new Experimental_StdioMCPTransport({
      command: options.server.command,
      args: options.server.args,
      env: { ARBITER_URL: options.arbiterUrl, ARBITER_API_KEY: options.apiKey },
    }),
  })
  try {
    const tools = await mcp.tools()
    return await generateText({
      model: options.model,
      tools,
      stopWhen: stepCountIs(10),
      system: 'You settle sub-agent outcomes through Arbiter. Act only on a verified manifest.',
      prompt: options.prompt,
    })
  } finally {
    await mcp.close()
  }
}
