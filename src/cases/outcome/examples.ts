/**
 * One outcome's round trip as the OpenAPI document shows it, taken from a real run: a refund sub-agent reports
 * success; the planner reads it as success, the reviewer (whose criterion also requires a receipt) as failure; the
 * evaluation HALTs with a criteria divergence, and a person resolves it. Tests parse every example with its schema
 * and send the requests to a live app. The signatures are shortened (`…`): they do not verify.
 */

const OUTCOME_ID = '43be04ce-cdd4-4426-8d7d-9b5a9f786c7b'
const HALT_ID = '064b3364-7244-4c23-9751-c89c40747cbe'
const RESOLVED_ID = 'e6db0b8b-3fdb-4210-8d31-2e1a4855f53d'
const FIRST_EVIDENCE = 'sha256:abb2815bf488f0543fd842c4f69e3ef7988cc1160bcd2db09be85179a3771e89'
const EVIDENCE_HASH = 'sha256:a43f10e72d7cbcc7c83b05e9bef729be07013b7d5a4b6e2e55c09d73f6204319'
const ITEM_HASHES = [
  'sha256:0785768a903a401003d15067f37cad79b58025ece20f6358817b98cee26da5ec',
  'sha256:54d0a64472646080dd7e604cfe8fe9f13e25cc523efd9df45875eeaa170298c1',
]
const PLANNER_CRITERION = 'sha256:1c21e70fb73c3b31e10c7c3ebb08028c732ab338787cdf81d4377937c2e20d2f'
const REVIEWER_CRITERION = 'sha256:8a6d8061656e17ebef360faff78c5cf75237fa183e1532987bc48b155a6c91e5'
const JWS_HEADER =
  'eyJhbGciOiJFZDI1NTE5Iiwia2lkIjoiX3BQUGJRakdIZ3RMNUhSaTBkbjFLdEpnTFd3ZXk5T3E4WXR1Zlp2a2ptdyJ9'

/** `POST /v1/outcomes`: what the sub-agent returned, and who is expected to read it. */
export const createOutcomeExample = {
  subagent_id: 'refund-agent',
  run_id: 'run-2026-11-30-0042',
  evidence: [
    { kind: 'result_payload', name: 'result', content: { refund_id: 're_1', status: 'ok' } },
    { kind: 'exit_code', content: 0 },
  ],
  expected_orchestrators: ['planner', 'reviewer'],
  deadline: '2026-11-30T18:00:00Z',
}

/** `POST /v1/outcomes/{id}/evidence`: a log line found later. */
export const appendEvidenceExample = {
  evidence: [{ kind: 'log', name: 'stdout', content: 'refund re_1 settled' }],
}

/** `GET /v1/outcomes/{id}` (and the answer to a creation): the outcome as first recorded. */
export const outcomeExample = {
  outcome_id: OUTCOME_ID,
  subagent_id: 'refund-agent',
  run_id: 'run-2026-11-30-0042',
  status: 'open',
  evidence_hash: FIRST_EVIDENCE,
  evidence_versions: [
    { evidence_hash: FIRST_EVIDENCE, item_hashes: ITEM_HASHES, created_at: '2026-11-30T17:56:56.996Z' },
  ],
  evidence: createOutcomeExample.evidence,
  interpretations: [],
  expected_orchestrators: ['planner', 'reviewer'],
  deadline: '2026-11-30T18:00:00.000Z',
  arbiter_orchestrator_id: null,
  probe: null,
  fallback_policy: 'escalate',
  manifest_id: null,
  reevaluation_rounds: 0,
  created_at: '2026-11-30T17:56:56.996Z',
}

/** `POST /v1/outcomes/{id}/interpretations`: the planner's reading, then the reviewer's. */
export const interpretationExamples = [
  {
    orchestrator_id: 'planner',
    success_criterion: { require: ['exit_code == 0'] },
    outcome_interpretation: 'success',
    intended_action: { kind: 'proceed', resources: ['order/1042'] },
    rationale: 'exit 0 and the refund is settled',
  },
  {
    orchestrator_id: 'reviewer',
    success_criterion: { require: ['exit_code == 0', 'receipt present'] },
    outcome_interpretation: 'failure',
    intended_action: { kind: 'retry', resources: ['order/1042'] },
    rationale: 'no receipt in the evidence',
  },
]

/** An interpretation as the outcome shows it: the reading asked for, its criterion's signature, its arrival. */
function storedReading(
  asked: (typeof interpretationExamples)[number],
  success_criterion_signature: string,
  received_at: string,
) {
  return {
    orchestrator_id: asked.orchestrator_id,
    success_criterion_signature,
    outcome_interpretation: asked.outcome_interpretation,
    evidence_hash: EVIDENCE_HASH,
    intended_action: asked.intended_action,
    revision: 1,
    received_at,
  }
}

const plannerReading = storedReading(
  interpretationExamples[0]!,
  PLANNER_CRITERION,
  '2026-11-30T17:57:57.332Z',
)
const reviewerReading = storedReading(
  interpretationExamples[1]!,
  REVIEWER_CRITERION,
  '2026-11-30T17:58:57.446Z',
)

/** The answer to the planner's interpretation. */
export const interpretationCreatedExample = {
  ...plannerReading,
  interpretation_id: '7133b99c-3e97-4d0d-8f24-d66834ed1a5d',
}

/** `POST /v1/outcomes/{id}/evaluate` → 202 while an expected orchestrator has not answered. */
export const pendingExample = { status: 'pending', missing_orchestrators: ['reviewer'] }

/** What the HALT found: the two criteria differ at `/require/1`. */
export const divergenceReceiptExample = {
  kind: 'criteria',
  actions_disjoint: false,
  pairs: [
    {
      a: 'planner',
      b: 'reviewer',
      a_interpretation: 'success',
      b_interpretation: 'failure',
      a_criterion_signature: PLANNER_CRITERION,
      b_criterion_signature: REVIEWER_CRITERION,
      criteria_divergence: [{ pointer: '/require/1', b: 'receipt present' }],
      evidence_divergence: null,
    },
  ],
  receipt_digest: 'sha256:945bdc2bb31bca9b9f82e92f4b5cdd96427a7313755467cbc8e311d39b686bc1',
}

const haltManifest = {
  kind: 'outcome',
  manifest_id: HALT_ID,
  outcome_id: OUTCOME_ID,
  subagent_id: 'refund-agent',
  run_id: 'run-2026-11-30-0042',
  issued_at: '2026-11-30T17:59:57.513Z',
  verdict: 'CRITERIA_DIFFER',
  directive: 'HALT',
  resolved_outcome: null,
  subagent_outcome_evidence_hash: EVIDENCE_HASH,
  interpretations: [plannerReading, reviewerReading],
  interpretation_divergence_receipt: divergenceReceiptExample,
  ground_truth_arbiter_predicate: null,
  action_owner: null,
  missing_orchestrators: [],
  supersedes: null,
  resolution: null,
}

/** `POST /v1/outcomes/{id}/evaluate` → 200: the signed HALT (it opens an escalation). */
export const haltEnvelopeExample = {
  manifest: haltManifest,
  manifest_digest: 'sha256:8129ee348daf62560989e57ceec8e7d4429b66e562e713cf910163c2312ce7fe',
  jws: `${JWS_HEADER}.eyJhY3Rpb25fb3duZXIiOm51bGwsImRpcmVjdGl2ZSI6IkhBTFQi…`,
  audit_seq: 11,
}

/** `POST /v1/outcomes/{id}/resolution`: a person settles the HALT. */
export const resolutionExample = {
  outcome: 'failure',
  rationale: 'the receipt is missing: retry',
  action_owner: 'reviewer',
}

/** The answer to the resolution: a final manifest that supersedes the HALT. */
export const resolvedEnvelopeExample = {
  manifest: {
    ...haltManifest,
    manifest_id: RESOLVED_ID,
    issued_at: '2026-11-30T18:05:57.559Z',
    verdict: 'HUMAN_RESOLVED',
    directive: 'PROCEED',
    resolved_outcome: 'failure',
    action_owner: 'reviewer',
    supersedes: HALT_ID,
    resolution: { by: 'b8d3d659-6d10-442d-ba70-f2d4becfb5ab', rationale: 'the receipt is missing: retry' },
  },
  manifest_digest: 'sha256:f8211d78c4e480d3b8aad8920edad569a35ecb62cd0134d97522e257ead5dbbd',
  jws: `${JWS_HEADER}.eyJhY3Rpb25fb3duZXIiOiJyZXZpZXdlciIsImRpcmVjdGl2ZSI6IlBST0NFRUQi…`,
  audit_seq: 13,
}

/** One audit record: the outcome's creation. */
export const auditRecordExample = {
  seq: 6,
  at: '2026-11-30T17:56:56.996Z',
  kind: 'outcome.created',
  actor: 'd90e0e2e-1ece-4cb0-8328-ee651c92d022',
  outcome_id: OUTCOME_ID,
  manifest_id: null,
  subagent_id: 'refund-agent',
  orchestrator_id: null,
  verdict: null,
  data: {
    run_id: 'run-2026-11-30-0042',
    deadline: '2026-11-30T18:00:00.000Z',
    probe_id: null,
    item_hashes: ITEM_HASHES,
    evidence_hash: FIRST_EVIDENCE,
    request_digest: 'sha256:a74358c60a9169529918a3ecc2d53b90f65e6416cde33cb6e1bb30c855f086be',
    fallback_policy: 'escalate',
    expected_orchestrators: ['planner', 'reviewer'],
    arbiter_orchestrator_id: null,
  },
  prev_hash: 'sha256:9150750339b3851edb7229ab2d757472de5531b2fb799dbabff7714a81fb4f0e',
  hash: 'sha256:f434409a05500cad9c3b2ee66d39da0a98e0d280c66a92c2065110e715e60c26',
}

/** `GET /v1/audit/outcomes/{id}`: the story (shortened to its first record) and the manifest in force. */
export const outcomeStoryExample = {
  outcome_id: OUTCOME_ID,
  status: 'resolved',
  records: [auditRecordExample],
  manifest: resolvedEnvelopeExample,
}

/** `GET /v1/escalations`: the HALT above, still open. */
export const escalationExample = {
  case: 'outcome',
  outcome_id: OUTCOME_ID,
  fanout_id: null,
  subagent_id: 'refund-agent',
  run_id: 'run-2026-11-30-0042',
  status: 'open',
  manifest_id: HALT_ID,
  verdict: 'CRITERIA_DIFFER',
  interpretation_divergence_receipt: divergenceReceiptExample,
  opened_at: '2026-11-30T17:59:57.477Z',
  resolved_at: null,
}
