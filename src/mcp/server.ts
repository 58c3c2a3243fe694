import { type ArbiterClient, ArbiterError } from '@arbiter/client'
// The low-level Server rather than McpServer: McpServer shows a union body (worker results, verdicts) as an empty
// object schema and reports argument errors as one line of zod text; these tools publish the routes' own JSON
// Schemas and answer bad arguments with the fields named, as the HTTP API does.
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { type ArgumentError, parseToolArguments, toolInputJsonSchema } from './tool-input.ts'
import { ARBITER_TOOLS, type ArbiterTool } from './tools.ts'

export const MCP_SERVER_NAME = 'arbiter'

const INSTRUCTIONS =
  'Arbiter settles disagreements between orchestrators and returns one signed manifest per decision. ' +
  'Outcomes: record_outcome, submit_interpretation (one per orchestrator), evaluate_outcome. ' +
  'Fan-outs: create_fanout, submit_worker_result (one per subtask), reconcile_fanout. ' +
  'Reviews: create_review, submit_verdict (one per judge), decide_review. ' +
  'Act on `manifest.directive`; check a manifest with verify_manifest; ops see HALTed cases with list_escalations; ' +
  'admins push decisions to a receiver with register_webhook and see them with list_webhooks.'

/** The tools as `tools/list` shows them, built once: their schemas do not change while the server runs. */
export function toolDefinitions(tools: readonly ArbiterTool[] = ARBITER_TOOLS): Tool[] {
  return tools.map((tool) => ({
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: toolInputJsonSchema(tool.input),
    annotations: {
      title: tool.title,
      readOnlyHint: tool.readOnly,
      // The service deduplicates writes (natural key, content, or same inputs → same manifest); a tool says when not.
      idempotentHint: tool.idempotent ?? true,
      destructiveHint: false,
      openWorldHint: false,
    },
  }))
}

function errorResult(text: string, structured: Record<string, unknown>): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }], structuredContent: structured }
}

const describeErrors = (errors: readonly ArgumentError[]) =>
  errors.map((error) => `\n- ${error.path}: ${error.message}`).join('')

/**
 * A problem+json answer as a tool error: the text is the problem's detail and its field errors (what an agent
 * needs to correct the call); the structured content is the whole problem, extension members (`manifest_id` on a
 * 409) included.
 */
export function problemResult(error: ArbiterError): CallToolResult {
  const detail = error.detail || error.title
  return errorResult(`${error.status} ${error.title}: ${detail}${describeErrors(error.errors)}`, {
    ...error.problem,
  })
}

/** Runs one tool call: arguments checked by the route's schema, then the client call; never throws. */
export async function callTool(
  client: ArbiterClient,
  tool: ArbiterTool,
  args: Record<string, unknown> | undefined,
): Promise<CallToolResult> {
  const parsed = parseToolArguments(tool.input, args)
  if (!parsed.ok) {
    const detail = `invalid arguments for ${tool.name}`
    return errorResult(`${detail}:${describeErrors(parsed.errors)}`, { detail, errors: parsed.errors })
  }
  try {
    const result = await tool.run(client, parsed.ids, parsed.body)
    return {
      content: [{ type: 'text', text: JSON.stringify(result) }],
      structuredContent: result as Record<string, unknown>,
    }
  } catch (err) {
    if (err instanceof ArbiterError) return problemResult(err)
    // No answer (connection refused, timeout) or an unreadable one: the call may be retried as it is.
    return errorResult((err as Error).message, { detail: (err as Error).message })
  }
}

/** An MCP server whose tools call Arbiter through `client`; connect it to a transport to serve. */
export function createArbiterMcpServer(client: ArbiterClient, version: string): Server {
  const server = new Server(
    { name: MCP_SERVER_NAME, title: 'Arbiter', version },
    { capabilities: { tools: {} }, instructions: INSTRUCTIONS },
  )
  const definitions = toolDefinitions()
  const byName = new Map(ARBITER_TOOLS.map((tool) => [tool.name, tool]))
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: definitions }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = byName.get(request.params.name)
    if (tool === undefined) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `unknown tool ${request.params.name}; tools/list names them`,
      )
    }
    return callTool(client, tool, request.params.arguments)
  })
  return server
}
