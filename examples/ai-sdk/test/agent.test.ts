import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { REPO_ROOT } from '../../../test/helpers/child-server.ts'
import { listenTestApp } from '../../../test/helpers/listening-app.ts'
import { runAgent } from '../src/agent.ts'
import { settlementModel } from '../src/scripted-model.ts'

/*
 * Arbiter's MCP server driven by a second, independent MCP client: the Vercel AI SDK's (`@ai-sdk/mcp` over stdio),
 * in the SDK's own tool loop, with its mock language model emitting the tool calls. The server is the built CLI
 * (`node dist/cli.js mcp`; run `npm run build` first) calling a live Arbiter (PostgreSQL at TEST_DATABASE_URL,
 * else the embedded database) over HTTP.
 */

const arbiter = await listenTestApp({ after })

describe('an AI SDK agent on Arbiter’s MCP tools', () => {
  it('records an outcome, interprets twice, evaluates, and reads back the signed manifest', async () => {
    const apiKey = await arbiter.key('orchestrator', ['orch-a', 'orch-b'])
    const model = settlementModel({
      outcome: {
        subagent_id: 'refund-agent',
        run_id: 'ai-sdk-1',
        evidence: [
          { kind: 'exit_code', content: 0 },
          { kind: 'result_payload', name: 'result', content: { refund_id: 're_9' } },
        ],
        expected_orchestrators: ['orch-a', 'orch-b'],
        fallback_policy: 'strictest_wins',
      },
      interpretations: [
        {
          orchestrator_id: 'orch-a',
          outcome_interpretation: 'success',
          success_criterion: { require: ['exit_code == 0'] },
          intended_action: { kind: 'proceed', resources: ['refund:re_9'] },
        },
        {
          orchestrator_id: 'orch-b',
          outcome_interpretation: 'failure',
          success_criterion: { require: ['exit_code == 0', 'receipt present'] },
          intended_action: { kind: 'compensate', resources: ['refund:re_9'] },
        },
      ],
    })

    const result = await runAgent({
      model,
      server: { command: process.execPath, args: [join(REPO_ROOT, 'dist', 'cli.js'), 'mcp'] },
      arbiterUrl: arbiter.baseUrl,
      apiKey,
      prompt: 'The refund sub-agent finished run ai-sdk-1. Settle its outcome for orch-a and orch-b.',
    })

    const calls = result.steps.flatMap((step) => step.toolCalls.map((call) => call.toolName))
    assert.deepEqual(calls, [
      'record_outcome',
      'submit_interpretation',
      'submit_interpretation',
      'evaluate_outcome',
      'get_manifest',
      'verify_manifest',
    ])
    const errors = result.steps.flatMap((step) => step.content.filter((part) => part.type === 'tool-error'))
    assert.deepEqual(errors, [])

    // What the agent read back is the manifest Arbiter signed and stores.
    const outputs = new Map(
      result.steps.flatMap((step) =>
        step.toolResults.map((r) => [
          r.toolName,
          (r.output as { structuredContent: unknown }).structuredContent,
        ]),
      ),
    )
    const fetched = outputs.get('get_manifest') as { manifest: Record<string, unknown>; jws: string }
    assert.equal(fetched.manifest.verdict, 'POLICY_RESOLVES')
    assert.equal(fetched.manifest.resolved_outcome, 'failure')
    assert.equal(fetched.manifest.action_owner, 'orch-b')
    assert.equal((outputs.get('verify_manifest') as { valid: boolean }).valid, true)
    const stored = await arbiter.request(arbiter.adminKey, {
      method: 'GET',
      url: `/v1/manifests/${fetched.manifest.manifest_id}`,
    })
    assert.equal(stored.json().jws, fetched.jws)
    const outcome = await arbiter.request(arbiter.adminKey, {
      method: 'GET',
      url: `/v1/outcomes/${fetched.manifest.outcome_id}`,
    })
    assert.equal(outcome.json().status, 'decided')

    assert.equal(
      result.text,
      `manifest ${fetched.manifest.manifest_id} verified: POLICY_RESOLVES, action owner orch-b`,
    )
  })
})
