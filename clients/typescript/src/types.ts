/**
 * Request and response types, all derived from the generated OpenAPI types: when the service's document changes
 * and the types are regenerated, these follow (or stop compiling where a wrapper no longer fits).
 */
import type { components, paths } from './generated/openapi.ts'

export type { components, paths }

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete'

/** The operation object of a path and method, as generated. */
export type Operation<P extends keyof paths, M extends Method> = Exclude<paths[P][M], undefined>

/** The JSON request body of an operation. */
export type RequestBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends {
    requestBody?: { content: { 'application/json': infer Body } }
  }
    ? Body
    : never

/** The JSON body of one response status of an operation. */
export type ResponseBody<
  P extends keyof paths,
  M extends Method,
  S extends keyof Operation<P, M>['responses'],
> = Operation<P, M>['responses'][S] extends { content: { 'application/json': infer Body } } ? Body : never

/** The query parameters of an operation (an empty object type when it takes none). */
export type QueryParams<P extends keyof paths, M extends Method> =
  Operation<P, M> extends {
    parameters: { query?: infer Query }
  }
    ? NonNullable<Query>
    : never

type Schemas = components['schemas']

export type ManifestEnvelope = Schemas['ManifestEnvelope']
export type Manifest = ManifestEnvelope['manifest']
export type Outcome = Schemas['Outcome']
export type EvaluationPending = Schemas['EvaluationPending']
export type Escalation = Schemas['Escalation']
export type AuditRecord = Schemas['AuditRecord']
export type Probe = Schemas['Probe']
export type ApiKey = Schemas['ApiKey']
export type CreatedApiKey = Schemas['CreatedApiKey']
export type Fanout = Schemas['Fanout']
export type FanoutResultRecorded = Schemas['FanoutResultRecorded']
export type ReconciliationEnvelope = Schemas['ReconciliationManifestEnvelope']
export type ReconcilePending = Schemas['ReconcilePending']
export type Review = Schemas['Review']
export type ReviewVerdictRecorded = Schemas['ReviewVerdictRecorded']
export type ReviewEnvelope = Schemas['ReviewManifestEnvelope']
export type ReviewPending = Schemas['ReviewPending']
export type InclusionProof = Schemas['InclusionProof']
export type ConsistencyProof = Schemas['ConsistencyProof']
export type ManifestInclusion = Schemas['ManifestInclusion']
export type Webhook = Schemas['Webhook']
export type WebhookWithSecret = Schemas['WebhookWithSecret']
export type WebhookDelivery = Schemas['WebhookDelivery']

export type CreateOutcomeBody = RequestBody<'/v1/outcomes', 'post'>
export type AddEvidenceBody = RequestBody<'/v1/outcomes/{id}/evidence', 'post'>
export type InterpretationBody = RequestBody<'/v1/outcomes/{id}/interpretations', 'post'>
export type InterpretationRecorded = ResponseBody<'/v1/outcomes/{id}/interpretations', 'post', 201>
export type EvaluationResult = ResponseBody<'/v1/outcomes/{id}/evaluate', 'post', 200 | 202>
export type ResolutionBody = RequestBody<'/v1/outcomes/{id}/resolution', 'post'>
export type CreateKeyBody = RequestBody<'/v1/admin/keys', 'post'>
export type ProbeBody = RequestBody<'/v1/probes', 'post'>
export type ReplaceProbeBody = RequestBody<'/v1/probes/{id}', 'put'>
export type DryRunBody = RequestBody<'/v1/probes/{id}/dry-run', 'post'>
export type DryRunResult = ResponseBody<'/v1/probes/{id}/dry-run', 'post', 200>
export type CreateFanoutBody = RequestBody<'/v1/fanouts', 'post'>
export type FanoutResultBody = RequestBody<'/v1/fanouts/{id}/results', 'post'>
export type ReconcileBody = NonNullable<RequestBody<'/v1/fanouts/{id}/reconcile', 'post'>>
export type ReconcileResult = ResponseBody<'/v1/fanouts/{id}/reconcile', 'post', 200 | 202>
export type FanoutResolutionBody = RequestBody<'/v1/fanouts/{id}/resolution', 'post'>
export type CreateReviewBody = RequestBody<'/v1/reviews', 'post'>
export type VerdictBody = RequestBody<'/v1/reviews/{id}/verdicts', 'post'>
export type RevisionBody = RequestBody<'/v1/reviews/{id}/revisions', 'post'>
export type DecideResult = ResponseBody<'/v1/reviews/{id}/decide', 'post', 200 | 202>
export type CreateWebhookBody = RequestBody<'/v1/webhooks', 'post'>
export type UpdateWebhookBody = RequestBody<'/v1/webhooks/{id}', 'patch'>

export type OutcomeQuery = QueryParams<'/v1/outcomes', 'get'>
export type ManifestQuery = QueryParams<'/v1/manifests', 'get'>
export type EscalationQuery = QueryParams<'/v1/escalations', 'get'>
export type AuditRecordQuery = QueryParams<'/v1/audit/records', 'get'>
export type AuditVerifyQuery = QueryParams<'/v1/audit/verify', 'get'>
export type KeyQuery = QueryParams<'/v1/admin/keys', 'get'>
export type ProbeQuery = QueryParams<'/v1/probes', 'get'>
export type FanoutQuery = QueryParams<'/v1/fanouts', 'get'>
export type ReviewQuery = QueryParams<'/v1/reviews', 'get'>
export type InclusionProofQuery = QueryParams<'/v1/audit/proofs/inclusion', 'get'>
export type ConsistencyProofQuery = QueryParams<'/v1/audit/proofs/consistency', 'get'>
export type WebhookQuery = QueryParams<'/v1/webhooks', 'get'>
export type WebhookDeliveryQuery = QueryParams<'/v1/webhooks/{id}/deliveries', 'get'>

export type OutcomePage = ResponseBody<'/v1/outcomes', 'get', 200>
export type ManifestPage = ResponseBody<'/v1/manifests', 'get', 200>
export type EscalationPage = ResponseBody<'/v1/escalations', 'get', 200>
export type AuditRecordPage = ResponseBody<'/v1/audit/records', 'get', 200>
export type KeyPage = ResponseBody<'/v1/admin/keys', 'get', 200>
export type ProbePage = ResponseBody<'/v1/probes', 'get', 200>
export type FanoutPage = ResponseBody<'/v1/fanouts', 'get', 200>
export type ReviewPage = ResponseBody<'/v1/reviews', 'get', 200>
export type WebhookPage = ResponseBody<'/v1/webhooks', 'get', 200>
export type WebhookDeliveryPage = ResponseBody<'/v1/webhooks/{id}/deliveries', 'get', 200>
export type OutcomeStory = ResponseBody<'/v1/audit/outcomes/{id}', 'get', 200>
export type AuditVerification = ResponseBody<'/v1/audit/verify', 'get', 200>
export type AuditCheckpoint = ResponseBody<'/v1/audit/checkpoint', 'get', 200>
export type Jwks = ResponseBody<'/.well-known/jwks.json', 'get', 200>
export type Health = ResponseBody<'/healthz', 'get', 200>

/** True for the 202 answer of evaluate: some expected orchestrator has not reported and the deadline is ahead. */
export function isEvaluationPending(result: EvaluationResult): result is EvaluationPending {
  return 'status' in result && result.status === 'pending'
}

/** True for the 202 answer of reconcile: a subtask has no result yet and the deadline (if any) is ahead. */
export function isReconcilePending(result: ReconcileResult): result is ReconcilePending {
  return 'status' in result && result.status === 'pending'
}

/** True for the 202 answer of decide: a judge the mode needs has not returned. */
export function isDecidePending(result: DecideResult): result is ReviewPending {
  return 'status' in result && result.status === 'pending'
}
