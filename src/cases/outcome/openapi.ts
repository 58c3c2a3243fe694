import type { CaseKindDocs } from '../../http/case-kinds.ts'

/** What the API document says of the outcome kind's operations (sub-agent policies are in its admin group). */
export const outcomeDocs: CaseKindDocs = {
  operationIds: {
    'POST /v1/outcomes': 'createOutcome',
    'GET /v1/outcomes': 'listOutcomes',
    'GET /v1/outcomes/{id}': 'getOutcome',
    'POST /v1/outcomes/{id}/evidence': 'addOutcomeEvidence',
    'POST /v1/outcomes/{id}/interpretations': 'submitInterpretation',
    'POST /v1/outcomes/{id}/evaluate': 'evaluateOutcome',
    'POST /v1/outcomes/{id}/resolution': 'resolveOutcome',
    'GET /v1/audit/outcomes/{id}': 'getOutcomeStory',
    'PUT /v1/subagents/{subagent_id}/policy': 'putSubagentPolicy',
    'GET /v1/subagents/{subagent_id}/policy': 'getSubagentPolicy',
    'DELETE /v1/subagents/{subagent_id}/policy': 'deleteSubagentPolicy',
  },
  tags: {
    outcomes: 'A sub-agent result shared by several orchestrators, with its evidence',
    interpretations: "An orchestrator's judgement of an outcome",
    evaluation: 'Deciding an outcome, and resolving a HALT',
  },
  tagOrder: 1,
}
