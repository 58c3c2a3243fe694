import { hashJson, type JsonValue, type Sha256 } from '../shared/canonical-json.ts'
import type { FieldError } from '../shared/field-error.ts'
import { sortedUnique } from '../shared/order.ts'
import { DEFAULT_FALLBACK_POLICY, type FallbackPolicy } from './vocabulary.ts'

/*
 * Sub-agent policies: the rules an admin sets for every outcome of one sub-agent. Without them, whoever creates an
 * outcome first sets its rules — it could leave another orchestrator out of `expected_orchestrators`, appoint
 * itself arbiter with a deadline already past, and decide alone. Under a policy the outcome takes every one of
 * these fields from the policy; the body may repeat a field only with the policy's value. The one thing the body
 * still supplies is the probe's params (the admin picks the probe, the run names what it looks up).
 */

/** A sub-agent's policy, every field filled in: a field the admin omitted holds its default and is locked to it. */
export interface SubagentPolicy {
  /** Sorted and unique. */
  expected_orchestrators: string[]
  arbiter_orchestrator_id: string | null
  /** The outcome's deadline is its creation time plus this; null: no deadline. */
  deadline_seconds: number | null
  fallback_policy: FallbackPolicy
  probe_id: string | null
}

/** The fields of an outcome body that say how the outcome will be decided, as the caller sent them. */
export interface RequestedRules {
  expected_orchestrators?: readonly string[] | undefined
  deadline?: string | undefined
  arbiter_orchestrator_id?: string | undefined
  probe?: { probe_id?: string | undefined; params?: Record<string, JsonValue> | undefined } | undefined
  fallback_policy?: FallbackPolicy | undefined
}

/** How the outcome will be decided, as it is stored. */
export interface OutcomeRules {
  /** Sorted and unique. */
  expected_orchestrators: string[]
  /** RFC 3339. */
  deadline: string | null
  arbiter_orchestrator_id: string | null
  probe: { probe_id: string; params: Record<string, JsonValue> } | null
  fallback_policy: FallbackPolicy
}

export type RulesResult = { ok: true; rules: OutcomeRules } | { ok: false; errors: FieldError[] }

/**
 * The rules a new outcome takes: the body's (with defaults) when its sub-agent has no policy, the policy's when
 * it has one. Under a policy, every field the body sets differently from the policy is an error at that field's
 * path (a JSON pointer into the body); all of them are reported at once. `createdAtMs` is the outcome's creation
 * time, from which a policy's deadline counts.
 */
export function outcomeRules(
  body: RequestedRules,
  policy: SubagentPolicy | null,
  createdAtMs: number,
): RulesResult {
  const errors: FieldError[] = []
  const probeId = policy ? policy.probe_id : (body.probe?.probe_id ?? null)
  if (policy === null && body.probe && body.probe.probe_id === undefined) {
    errors.push({ path: '/probe/probe_id', message: 'required: no policy of this sub-agent names a probe' })
  }
  if (policy !== null) errors.push(...policyViolations(body, policy))
  if (errors.length > 0) return { ok: false, errors }

  if (policy === null) {
    return {
      ok: true,
      rules: {
        expected_orchestrators: sortedUnique(body.expected_orchestrators ?? []),
        deadline: body.deadline ?? null,
        arbiter_orchestrator_id: body.arbiter_orchestrator_id ?? null,
        probe: body.probe && probeId ? { probe_id: probeId, params: body.probe.params ?? {} } : null,
        fallback_policy: body.fallback_policy ?? DEFAULT_FALLBACK_POLICY,
      },
    }
  }
  return {
    ok: true,
    rules: {
      expected_orchestrators: [...policy.expected_orchestrators],
      deadline:
        policy.deadline_seconds === null
          ? null
          : new Date(createdAtMs + policy.deadline_seconds * 1000).toISOString(),
      arbiter_orchestrator_id: policy.arbiter_orchestrator_id,
      probe: policy.probe_id ? { probe_id: policy.probe_id, params: body.probe?.params ?? {} } : null,
      fallback_policy: policy.fallback_policy,
    },
  }
}

/** Every field of the body that departs from the policy, in the body's field order. */
function policyViolations(body: RequestedRules, policy: SubagentPolicy): FieldError[] {
  const errors: FieldError[] = []
  if (
    body.expected_orchestrators !== undefined &&
    !sameList(sortedUnique(body.expected_orchestrators), policy.expected_orchestrators)
  ) {
    errors.push({
      path: '/expected_orchestrators',
      message: `the sub-agent's policy sets the expected orchestrators to ${JSON.stringify(policy.expected_orchestrators)}`,
    })
  }
  if (body.deadline !== undefined) {
    errors.push({
      path: '/deadline',
      message:
        policy.deadline_seconds === null
          ? "the sub-agent's policy sets no deadline"
          : `the sub-agent's policy sets the deadline to ${policy.deadline_seconds} s after creation`,
    })
  }
  if (
    body.arbiter_orchestrator_id !== undefined &&
    body.arbiter_orchestrator_id !== policy.arbiter_orchestrator_id
  ) {
    errors.push({
      path: '/arbiter_orchestrator_id',
      message:
        policy.arbiter_orchestrator_id === null
          ? "the sub-agent's policy names no arbiter"
          : `the sub-agent's policy names ${JSON.stringify(policy.arbiter_orchestrator_id)} as arbiter`,
    })
  }
  if (body.probe !== undefined) {
    if (policy.probe_id === null) {
      errors.push({ path: '/probe', message: "the sub-agent's policy attaches no probe" })
    } else if (body.probe.probe_id !== undefined && body.probe.probe_id !== policy.probe_id) {
      errors.push({
        path: '/probe/probe_id',
        message: `the sub-agent's policy attaches probe ${policy.probe_id}; the body may give only its params`,
      })
    }
  }
  if (body.fallback_policy !== undefined && body.fallback_policy !== policy.fallback_policy) {
    errors.push({
      path: '/fallback_policy',
      message: `the sub-agent's policy sets the fallback policy to ${JSON.stringify(policy.fallback_policy)}`,
    })
  }
  return errors
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i])
}

/** The rule fields stored with an outcome that a fingerprint under a policy fills in. */
export interface FingerprintRules {
  expected_orchestrators: readonly string[]
  arbiter_orchestrator_id: string | null
  probe_id: string | null
  fallback_policy: FallbackPolicy
}

/**
 * The fingerprint of an outcome body, stored with the outcome to recognise "the same body again" under its
 * natural key. `rules` is null for an outcome created without a policy: the body with the default fallback
 * policy spelled out. For one created under a policy, `rules` are the rules it took (the policy's, as copied
 * into the outcome): every rule field the body leaves out is filled in from them, the orchestrators are compared
 * as a set and the probe's id is filled in, so the spellings the policy makes equivalent have one fingerprint.
 * That fingerprint is tagged, so it never equals one taken without a policy. A resent body is judged against
 * the outcome's stored rules (`sameOutcomeBody`), never against the policy in force now.
 */
export function outcomeBodyFingerprint<B extends RequestedRules>(
  body: B,
  rules: FingerprintRules | null,
): Sha256 {
  if (rules === null)
    return hashJson({ ...body, fallback_policy: body.fallback_policy ?? DEFAULT_FALLBACK_POLICY })
  const probeId = body.probe?.probe_id ?? rules.probe_id
  return hashJson({
    under_policy: true,
    ...body,
    expected_orchestrators:
      body.expected_orchestrators === undefined
        ? [...rules.expected_orchestrators]
        : sortedUnique(body.expected_orchestrators),
    arbiter_orchestrator_id: body.arbiter_orchestrator_id ?? rules.arbiter_orchestrator_id,
    probe: probeId === null ? body.probe : { probe_id: probeId, params: body.probe?.params ?? {} },
    fallback_policy: body.fallback_policy ?? rules.fallback_policy,
  })
}

/**
 * Whether `body` is the body an existing outcome was created from: its stored fingerprint is the body's, taken
 * without a policy or under the rules the outcome stores (whichever way it was created).
 */
export function sameOutcomeBody<B extends RequestedRules>(
  body: B,
  stored: { request_digest: string } & FingerprintRules,
): boolean {
  return (
    stored.request_digest === outcomeBodyFingerprint(body, null) ||
    stored.request_digest === outcomeBodyFingerprint(body, stored)
  )
}
