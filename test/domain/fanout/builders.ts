/** Builders for fan-out domain tests: a fan-out, its workers' results, and the Vantage example. */
import assert from 'node:assert/strict'
import type {
  ClaimSource,
  FanoutDefinition,
  Qualifiers,
  ReconcileInput,
  SubmittedClaim,
  SubtaskResult,
} from '../../../src/domain/fanout/claims.ts'
import type {
  FactEntry,
  Reconciliation,
  ReconciliationDecision,
} from '../../../src/domain/fanout/reconciliation.ts'
import { type FanoutPolicyInput, withPolicyDefaults } from '../../../src/domain/fanout/vocabulary.ts'
import type { JsonValue } from '../../../src/domain/shared/canonical-json.ts'

export const FLOOR = 'vantage.enterprise.floor'
export const PARTNER_DISCOUNT = 'vantage.partner.discount'
export const SIXTY_K: JsonValue = { amount: 60000, currency: 'USD', per: 'year' }

/** A fan-out whose subtasks own the listed facts: `fanout({s1: ['f']})`. */
export function fanout(
  owners: Record<string, string[]>,
  policy: FanoutPolicyInput = {},
  facts: string[] = [...new Set(Object.values(owners).flat())],
): FanoutDefinition {
  return {
    facts,
    subtasks: Object.entries(owners).map(([subtask_id, owned]) => ({ subtask_id, facts: owned })),
    policy: withPolicyDefaults(policy),
  }
}

export function source(uri: string, extra: Omit<ClaimSource, 'uri'> = {}): ClaimSource {
  return { uri, ...extra }
}

export interface ClaimOptions {
  effective_date?: string | null
  qualifiers?: Qualifiers
  confidence?: number | null
  sources?: ClaimSource[]
}

/** A claim citing one source (`https://example.com/<value>` unless given). */
export function claim(fact: string, value: JsonValue, options: ClaimOptions = {}): SubmittedClaim {
  return {
    fact,
    value,
    ...options,
    sources: options.sources ?? [source(`https://example.com/${encodeURIComponent(JSON.stringify(value))}`)],
  }
}

export function result(
  subtask_id: string,
  claims: SubmittedClaim[],
  overrides: Partial<SubtaskResult> = {},
): SubtaskResult {
  return {
    subtask_id,
    revision: 1,
    status: 'DONE',
    late: false,
    received_at: '2026-11-29T12:00:00Z',
    result_digest: `sha256:${subtask_id.padEnd(64, '0').slice(0, 64)}`,
    claims,
    blocking_question: null,
    blocking_reason: null,
    concerns: [],
    ...overrides,
  }
}

export function needsContext(subtask_id: string, question = 'which region?'): SubtaskResult {
  return result(subtask_id, [], { status: 'NEEDS_CONTEXT', blocking_question: question })
}

export function blocked(subtask_id: string, reason = 'CRM is down'): SubtaskResult {
  return result(subtask_id, [], { status: 'BLOCKED', blocking_reason: reason })
}

export function input(
  definition: FanoutDefinition,
  results: SubtaskResult[],
  flags: Partial<Pick<ReconcileInput, 'deadline_passed' | 'closed'>> = {},
): ReconcileInput {
  return { fanout: definition, results, deadline_passed: false, closed: false, ...flags }
}

export function decided(reconciliation: Reconciliation): ReconciliationDecision {
  assert.equal(reconciliation.kind, 'decided', `expected a decision, got ${JSON.stringify(reconciliation)}`)
  return reconciliation as ReconciliationDecision
}

export function factOf(decision: ReconciliationDecision, fact: string): FactEntry {
  const entry = decision.facts.find((candidate) => candidate.fact === fact)
  assert.ok(entry, `no fact ${fact}`)
  return entry
}

/** st_3 read archived copies of Vantage's pricing page. */
export const ARCHIVED_PAGE_CLAIM: SubmittedClaim = {
  fact: FLOOR,
  value: SIXTY_K,
  effective_date: '2025-03-01',
  confidence: 0.81,
  sources: [
    {
      uri: 'https://vantage.com/pricing',
      excerpt: "capture 2025-03-04: 'Enterprise — from $60,000/yr'",
      observed_at: '2025-03-04T09:12:00Z',
    },
  ],
}

/** st_5 read the CRM's competitive-loss notes: same floor, six weeks earlier, new logos only. */
export const CRM_NOTE_CLAIM: SubmittedClaim = {
  fact: FLOOR,
  value: SIXTY_K,
  effective_date: '2025-01-22',
  qualifiers: { applies_to: 'new_logos' },
  confidence: 0.66,
  sources: [{ uri: 'crm://opp/118204', excerpt: 'their AE confirmed 60k floor, new business only' }],
}

export function vantageFanout(policy: FanoutPolicyInput = {}): FanoutDefinition {
  return fanout({ st_3: [FLOOR], st_5: [FLOOR] }, policy)
}

export const VANTAGE_RESULTS: SubtaskResult[] = [
  result('st_3', [ARCHIVED_PAGE_CLAIM]),
  result('st_5', [CRM_NOTE_CLAIM]),
]
