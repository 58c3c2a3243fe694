/**
 * A deterministic stand-in for a language model, on the AI SDK's own mock (`ai/test`). It plays the part a model
 * plays in an agent loop: read the conversation (the tool results so far) and answer with the next tool calls, or
 * with text when there is nothing left to call. The calls are the ones a model would make to settle a refund
 * sub-agent's outcome through Arbiter's MCP tools; the ids in them come from the tool results, as a model's would.
 */
import { MockLanguageModelV3 } from 'ai/test'

type DoGenerate = MockLanguageModelV3['doGenerate']
type CallOptions = Parameters<DoGenerate>[0]
type GenerateResult = Awaited<ReturnType<DoGenerate>>
type ToolCall = { toolName: string; input: Record<string, unknown> }

export interface SettlementScript {
  /** The `record_outcome` input: the sub-agent's result as the agent saw it. */
  outcome: Record<string, unknown>
  /** One `submit_interpretation` input per orchestrator (outcome_id is filled in from record_outcome's result). */
  interpretations: Record<string, unknown>[]
}

/** The structured content of each tool result in the conversation, by tool name (the latest one wins). */
function toolResults(prompt: CallOptions['prompt']): Map<string, Record<string, unknown>> {
  const results = new Map<string, Record<string, unknown>>()
  for (const message of prompt) {
    if (message.role !== 'tool') continue
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue
      const { output } = part
      // MCP tool results reach the model as their text content: the tool's JSON answer.
      if (output.type === 'content') {
        const text = output.value.find((item) => item.type === 'text')
        if (text && 'text' in text) results.set(part.toolName, JSON.parse(text.text))
      } else if (output.type === 'json') {
        results.set(part.toolName, output.value as Record<string, unknown>)
      } else if (output.type === 'text') {
        results.set(part.toolName, JSON.parse(output.value))
      }
    }
  }
  return results
}

const USAGE: GenerateResult['usage'] = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
}

function respond(calls: ToolCall[], text?: string): GenerateResult {
  return {
    content: text
      ? [{ type: 'text', text }]
      : calls.map((call, index) => ({
          type: 'tool-call' as const,
          toolCallId: `call-${call.toolName}-${index}`,
          toolName: call.toolName,
          input: JSON.stringify(call.input),
        })),
    finishReason: { unified: text ? 'stop' : 'tool-calls', raw: undefined },
    usage: USAGE,
    warnings: [],
  }
}

/** The next step of the settlement: record, interpret (once per orchestrator), evaluate, fetch, verify, report. */
export function nextStep(script: SettlementScript, prompt: CallOptions['prompt']): GenerateResult {
  const seen = toolResults(prompt)
  const recorded = seen.get('record_outcome')
  if (!recorded) return respond([{ toolName: 'record_outcome', input: script.outcome }])
  const outcomeId = recorded.outcome_id
  if (!seen.has('submit_interpretation')) {
    return respond(
      script.interpretations.map((reading) => ({
        toolName: 'submit_interpretation',
        input: { outcome_id: outcomeId, ...reading },
      })),
    )
  }
  const evaluated = seen.get('evaluate_outcome') as { manifest?: { manifest_id: string } } | undefined
  if (!evaluated?.manifest)
    return respond([{ toolName: 'evaluate_outcome', input: { outcome_id: outcomeId } }])
  const fetched = seen.get('get_manifest')
  if (!fetched) {
    return respond([{ toolName: 'get_manifest', input: { manifest_id: evaluated.manifest.manifest_id } }])
  }
  const verified = seen.get('verify_manifest')
  if (!verified) return respond([{ toolName: 'verify_manifest', input: { envelope: fetched } }])
  const manifest = fetched.manifest as { manifest_id: string; verdict: string; action_owner: string | null }
  return respond(
    [],
    verified.valid === true
      ? `manifest ${manifest.manifest_id} verified: ${manifest.verdict}, action owner ${manifest.action_owner}`
      : `manifest ${manifest.manifest_id} does not verify (${String(verified.check)}): not acting on it`,
  )
}

/** A mock language model that follows the script, one step per call. */
export function settlementModel(script: SettlementScript): MockLanguageModelV3 {
  return new MockLanguageModelV3({ doGenerate: async ({ prompt }) => nextStep(script, prompt) })
}
