import { type ArbiterClient, ArbiterVerificationError } from '@arbiter/client'
import { z } from 'zod'
import { createFanoutBody, fanoutResultBody, reconcileFanoutBody } from '../cases/fanout/schemas.ts'
import { createOutcomeBody, interpretationBody } from '../cases/outcome/schemas.ts'
import { createReviewBody, decideBody, verdictBody } from '../cases/review/schemas.ts'
import { freeJson, pageQuery, uuidParam } from '../http/schemas/common.ts'
import { escalationQueryOf } from '../http/schemas/escalations.ts'
import { webhookCreateBodyOf } from '../http/schemas/webhooks.ts'
import type { ToolInput } from './tool-input.ts'

/**
 * One MCP tool: what an agent reads to choose it, the route schema its arguments follow, and the client call it
 * makes. Every result is a JSON object (the route's answer), returned as structured content.
 */
export interface ArbiterTool {
  name: string
  title: string
  description: string
  input: ToolInput
  /** Reads only (get, verify, list): a host may call it without asking. */
  readOnly: boolean
  /**
   * Calling it again with the same arguments has no further effect (default). Every write here is deduplicated by
   * the service, but a webhook's registration: each call registers another webhook, with its own secret.
   */
  idempotent?: boolean
  run(client: ArbiterClient, ids: Record<string, string>, body: Record<string, unknown>): Promise<object>
}

const OUTCOME_ID = 'The outcome, as `outcome_id` in the answer of record_outcome.'
const FANOUT_ID = 'The fan-out, as `fanout_id` in the answer of create_fanout.'
const REVIEW_ID = 'The review, as `review_id` in the answer of create_review.'

/** How a worker's result and a judge's verdict report (the status report both routes take). */
const STATUS_REPORT =
  'in the status report: `status` DONE (needs `evidence`), DONE_WITH_CONCERNS (`evidence`, `concerns`), ' +
  'NEEDS_CONTEXT (`blocking_question`) or BLOCKED (`blocking_reason`), always a `summary`'

/** How a list is read a page at a time. */
const PAGING =
  'page with `limit` (a decimal string, e.g. "20") and the `next_cursor` of the previous page as `cursor`'

/**
 * `verify_manifest` takes a manifest id (the manifest is fetched, then verified) or an envelope the agent holds
 * (verified as given). No route takes this body: the ids are the routes' own UUIDs and the envelope is free JSON.
 */
const verifyInput = z
  .strictObject({
    manifest_id: uuidParam.optional(),
    envelope: z.record(z.string(), freeJson).optional(),
  })
  .refine((input) => (input.manifest_id === undefined) !== (input.envelope === undefined), {
    message: 'give exactly one of manifest_id or envelope',
    path: ['manifest_id'],
  })

/** What verify_manifest answers: whether to trust the manifest, and if so what it says. */
async function verifyManifest(client: ArbiterClient, body: Record<string, unknown>): Promise<object> {
  const envelope =
    typeof body.manifest_id === 'string' ? await client.manifests.get(body.manifest_id) : body.envelope
  try {
    const verified = await client.manifests.verify(envelope)
    const manifest = verified.manifest as Record<string, unknown>
    return {
      valid: true,
      manifest_id: manifest.manifest_id,
      kind: manifest.kind,
      verdict: manifest.verdict,
      directive: manifest.directive,
      kid: verified.kid,
      alg: verified.alg,
      manifest_digest: verified.manifestDigest,
      audit_seq: verified.auditSeq,
    }
  } catch (err) {
    if (!(err instanceof ArbiterVerificationError)) throw err
    return { valid: false, check: err.check, reason: err.message }
  }
}

/** The query of `GET /v1/webhooks`, as the route takes it. */
const webhookListQuery = z.strictObject(pageQuery)

export const ARBITER_TOOLS: readonly ArbiterTool[] = [
  {
    name: 'record_outcome',
    title: 'Record a sub-agent outcome',
    description:
      'Record what a sub-agent returned (its evidence) so that several orchestrators can interpret it and Arbiter ' +
      'can settle their disagreement. (subagent_id, run_id) is the natural key: recording the same body again ' +
      'returns the same outcome, a different body for the same key is refused (409). List in ' +
      '`expected_orchestrators` who must interpret before evaluation decides. Returns the outcome; keep its ' +
      '`outcome_id` for submit_interpretation and evaluate_outcome. Orchestrator or admin key.',
    input: { ids: {}, body: createOutcomeBody },
    readOnly: false,
    run: (client, _ids, body) => client.outcomes.create(body as never),
  },
  {
    name: 'submit_interpretation',
    title: 'Submit an interpretation of an outcome',
    description:
      "Submit one orchestrator's judgement of an outcome: `outcome_interpretation` (success | partial | failure) " +
      'and exactly one of `success_criterion` (any JSON: what success meant to you) or `success_criterion_hash`; ' +
      'optionally the `intended_action` you would take and a `rationale`. Only under your own orchestrator id. ' +
      'Submitting the same interpretation again returns it; a different one becomes a new revision. Then call ' +
      'evaluate_outcome.',
    input: { ids: { outcome_id: OUTCOME_ID }, body: interpretationBody },
    readOnly: false,
    run: (client, ids, body) => client.outcomes.interpret(ids.outcome_id!, body as never),
  },
  {
    name: 'evaluate_outcome',
    title: 'Evaluate an outcome',
    description:
      "Run Arbiter's decision procedure over the outcome's interpretations and return the signed manifest " +
      '(`manifest.verdict`, `manifest.directive`: what every orchestrator must do). While an expected ' +
      'orchestrator has not interpreted and the deadline is ahead, returns `{status: "pending", ' +
      'missing_orchestrators}` instead: call again later. Unchanged inputs return the same manifest. ' +
      'Orchestrator or admin key (a dashboard key is refused).',
    input: { ids: { outcome_id: OUTCOME_ID } },
    readOnly: false,
    run: (client, ids) => client.outcomes.evaluate(ids.outcome_id!),
  },
  {
    name: 'get_manifest',
    title: 'Get a signed manifest',
    description:
      'Fetch a signed manifest envelope by its `manifest_id` (from evaluate_outcome, reconcile_fanout, ' +
      'decide_review or an escalation): `manifest` (the decision), `jws` (its Ed25519 signature), ' +
      '`manifest_digest` and `audit_seq`. Use verify_manifest before acting on a manifest you did not fetch yourself.',
    input: { ids: { manifest_id: 'The manifest, as `manifest_id` in a manifest or an escalation.' } },
    readOnly: true,
    run: (client, ids) => client.manifests.get(ids.manifest_id!),
  },
  {
    name: 'verify_manifest',
    title: 'Verify a manifest signature',
    description:
      "Check a manifest envelope against Arbiter's published signing keys (JWKS): Ed25519 signature, payload " +
      'exactly the canonical manifest, digest. Give `manifest_id` (fetched, then verified) or the `envelope` you ' +
      'hold. Answers `{valid: true, manifest_id, kind, verdict, directive, kid, …}` or `{valid: false, check, ' +
      'reason}`: never act on a manifest that is not valid.',
    input: { ids: {}, body: verifyInput },
    readOnly: true,
    run: (client, _ids, body) => verifyManifest(client, body),
  },
  {
    name: 'create_fanout',
    title: 'Create a fan-out',
    description:
      'Declare a fan-out before dispatching workers: the `question`, the `facts` to establish (keys), and ' +
      'the `subtasks` (each a `subtask_id` owning some facts) you will hand to workers; optionally a `deadline` ' +
      'and a reconciliation `policy`. (orchestrator_id, fanout_key) is the natural key: the same body again ' +
      'returns the same fan-out. Returns the fan-out with `fanout_id` and its coverage (uncovered facts, ' +
      'overlaps). Only under your own orchestrator id.',
    input: { ids: {}, body: createFanoutBody },
    readOnly: false,
    run: (client, _ids, body) => client.fanouts.create(body as never),
  },
  {
    name: 'submit_worker_result',
    title: "Submit a worker's result",
    description:
      "Submit one worker's return for a subtask " +
      STATUS_REPORT +
      '; with evidence, `claims` of facts (`fact`, `value`, `sources`). The same body again returns the stored ' +
      'result; a different one is a new revision. After the fan-out is decided it is refused (409, with ' +
      '`manifest_id`). Then call reconcile_fanout.',
    input: { ids: { fanout_id: FANOUT_ID }, body: fanoutResultBody },
    readOnly: false,
    run: (client, ids, body) => client.fanouts.submitResult(ids.fanout_id!, body as never),
  },
  {
    name: 'reconcile_fanout',
    title: "Reconcile a fan-out's results",
    description:
      "Reconcile the workers' claims fact by fact and return the signed reconciliation manifest: `manifest.directive` " +
      'PROCEED (use `manifest.facts`, each with its answer), REEVALUATE (answer the worker, then reconcile again) ' +
      'or HALT (contested or incomplete: a human resolves it; see `manifest.reasons`). While a subtask has ' +
      'no result and the deadline is ahead, returns `{status: "pending", missing_subtasks}`; pass `close: true` ' +
      'to stop waiting for them. Unchanged inputs return the same manifest.',
    input: { ids: { fanout_id: FANOUT_ID }, body: reconcileFanoutBody },
    readOnly: false,
    run: (client, ids, body) => client.fanouts.reconcile(ids.fanout_id!, body as never),
  },
  {
    name: 'create_review',
    title: 'Create a review',
    description:
      'Open a review of a change by a judge panel: the `subject` (its `digest`), the `implementer` (model, ' +
      'context_id) and the `judges`, in a `mode`: do_and_judge (one judge), two_stage (stage 1 then 2), debate ' +
      '(two judges and an optional meta judge), or council (advisory findings). Judges must be independent of ' +
      'the implementer (another model or context). (orchestrator_id, review_key) is the natural key. Returns the ' +
      'review with `review_id` and `revision`.',
    input: { ids: {}, body: createReviewBody },
    readOnly: false,
    run: (client, _ids, body) => client.reviews.create(body as never),
  },
  {
    name: 'submit_verdict',
    title: "Submit a judge's verdict",
    description:
      "Submit one judge's verdict on the review's current `revision` " +
      STATUS_REPORT +
      ', and `judge_id`; `findings` in council reviews only. The ' +
      'same verdict again returns it; a different one for the same revision is refused (409). Then call decide_review.',
    input: { ids: { review_id: REVIEW_ID }, body: verdictBody },
    readOnly: false,
    run: (client, ids, body) => client.reviews.submitVerdict(ids.review_id!, body as never),
  },
  {
    name: 'decide_review',
    title: 'Decide a review',
    description:
      'Decide the review from its verdicts and return the signed review manifest: `manifest.directive` APPLY ' +
      '(act on any concerns listed), PAUSE (answer `blocking_question`), REVISE (revise the change), HAND_BACK ' +
      'or ADVISORY (council findings). While a judge the mode needs has not returned, returns `{status: ' +
      '"pending", missing_judges}`: call again later. The same verdicts return the same manifest.',
    input: { ids: { review_id: REVIEW_ID }, body: decideBody },
    readOnly: false,
    run: (client, ids) => client.reviews.decide(ids.review_id!),
  },
  {
    name: 'list_escalations',
    title: 'List escalations',
    description:
      'List the cases Arbiter HALTed for a human to resolve (outcomes and fan-outs), oldest first, with the HALT ' +
      "manifest's `manifest_id`, its verdict and what the disagreement was. Filter by `status` (open | resolved) " +
      'and `case` (a case kind); ' +
      PAGING +
      '. Ops or admin key.',
    input: { ids: {}, body: escalationQueryOf() },
    readOnly: true,
    run: (client, _ids, body) => client.escalations.list(body as never),
  },
  {
    name: 'list_webhooks',
    title: 'List webhooks',
    description:
      'List the webhooks Arbiter pushes decisions to: each with its `webhook_id`, `url`, `events` ' +
      '(manifest.issued, escalation.opened, escalation.resolved), `filter`, and `disabled_at` / ' +
      '`disabled_reason` when deliveries stopped (410 Gone from the receiver, failures for too long, or an admin). ' +
      'Secrets are never listed; ' +
      PAGING +
      '. Admin key.',
    input: { ids: {}, body: webhookListQuery },
    readOnly: true,
    run: (client, _ids, body) => client.webhooks.list(body as never),
  },
  {
    name: 'register_webhook',
    title: 'Register a webhook',
    description:
      'Register an HTTP(S) endpoint that Arbiter POSTs decisions to, signed as Standard Webhooks specify ' +
      '(`webhook-id`, `webhook-timestamp`, `webhook-signature`) and retried until it answers 2xx: `url`, `events` ' +
      '(at least one of manifest.issued, escalation.opened, escalation.resolved), an optional `filter` (`kind`, ' +
      '`subagent_id`, `verdict`, `directive`, `orchestrator_id`: every member given must match) and `description`. ' +
      'The answer carries the signing `secret` (whsec_…) once and never again: hand it to the receiver, which ' +
      'verifies each delivery with it. Each call registers another webhook. The URL must pass the SSRF guard ' +
      '(no private or loopback address unless the service allows them). Admin key.',
    input: { ids: {}, body: webhookCreateBodyOf() },
    readOnly: false,
    idempotent: false,
    run: (client, _ids, body) => client.webhooks.create(body as never),
  },
]
