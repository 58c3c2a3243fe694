/**
 * Reconciliation of a fan-out as a pure function: the fan-out's facts, subtasks and policy plus the
 * latest result of each subtask in, the content of a reconciliation manifest out (or "still
 * waiting"). No clock, no database: the caller says whether the deadline has passed and whether the
 * owner closed the fan-out, and signs what comes back. docs/fanouts.md walks through an example.
 *
 * Nothing here depends on the order results arrived in or the order of claims within a result:
 * every list is sorted by a key derived from its content before it is returned.
 *
 * Cost, for n claims of one fact forming P distinct positions and citing S sources: grouping into
 * positions is one canonical serialisation and one map lookup per claim, O(n) plus an O(P log P)
 * sort; echo clusters are one union–find pass, O(S·α(S)); each policy rule reads every claim of the
 * tied positions once. The pairwise `conflicts` list, P·(P−1)/2 entries, would be the one quadratic
 * part, so it is bounded: a fact with more than MAX_COMPARED_POSITIONS distinct positions is not
 * compared at all, and a manifest lists at most MAX_LISTED_CONFLICTS pairs, handed out to facts in
 * fact order; a fact over either bound is `contested` with reason `too_many_positions`, no rule
 * tried, its positions and claims listed and its `conflicts` empty. A thousand claims repeating two
 * positions still make one conflict.
 */

import { MAX_COMPARED_POSITIONS, MAX_LISTED_CONFLICTS } from '../limits.ts'
import { canonicalJson, type JsonValue } from '../shared/canonical-json.ts'
import { diffJson, type JsonDifference } from '../shared/json-diff.ts'
import { sortedUnique } from '../shared/order.ts'
import type { ReportStatus } from '../status-report.ts'
import { checkDecomposition, type Overlap, type SubtaskOwnership } from './decomposition.ts'
import { choosePosition } from './policy-rules.ts'
import { clusterClaimsBySource, countClusters } from './source-clusters.ts'
import type {
  AnswerRule,
  ContestedReason,
  CoverageStatus,
  FactStatus,
  FanoutDirective,
  FanoutPolicy,
  FanoutVerdict,
  PolicyRule,
  ReasonCode,
} from './vocabulary.ts'

// ---------------------------------------------------------------------------
// Input

/** Qualifiers narrow what a claim is about: `{"applies_to": "new_logos"}`. */
export type Qualifiers = { [key: string]: string | number | boolean }

/** A source as the worker cited it. */
export interface ClaimSource {
  uri: string
  excerpt?: string | null
  /** `sha256:<hex>` of the bytes the worker read; when given, it alone identifies the source. */
  content_digest?: string | null
  /** RFC 3339 time the worker saw the source. */
  observed_at?: string | null
}

/** A claim as the worker submitted it (absent members mean null / `{}`). */
export interface SubmittedClaim {
  fact: string
  value: JsonValue
  effective_date?: string | null
  qualifiers?: Qualifiers
  confidence?: number | null
  sources: ClaimSource[]
}

export interface FanoutDefinition {
  facts: readonly string[]
  subtasks: readonly SubtaskOwnership[]
  /** With defaults filled in. */
  policy: FanoutPolicy
}

/** The latest result of one subtask, as stored. */
export interface SubtaskResult {
  subtask_id: string
  revision: number
  status: ReportStatus
  /** Received after the deadline. */
  late: boolean
  received_at: string
  result_digest: string
  /** As submitted, in submitted order (`claim_ref` indexes this list); `[]` when none. */
  claims: readonly SubmittedClaim[]
  blocking_question: string | null
  blocking_reason: string | null
  /** `[]` unless the status is DONE_WITH_CONCERNS. */
  concerns: readonly string[]
}

export interface ReconcileInput {
  fanout: FanoutDefinition
  /** At most one per subtask, in any order. */
  results: readonly SubtaskResult[]
  /** True when the fan-out has a deadline and it has passed (the caller owns the clock). */
  deadline_passed: boolean
  /** The owner asked to stop waiting (`{"close": true}`): missing subtasks count as missing now. */
  closed: boolean
}

// ---------------------------------------------------------------------------
// Output

/** What a claim asserts; JCS-equal positions are one position. Also the shape of every answer. */
export interface Position {
  value: JsonValue
  effective_date: string | null
  qualifiers: Qualifiers
}

export interface PositionEntry extends Position {
  /** `p1`, `p2`, … in the order of `JCS(position)`. */
  position_id: string
  /** Claim refs, sorted. */
  claims: string[]
  /** Source clusters among this position's claims. */
  independent_sources: number
  /** The rule that decided against this position; null unless it lost. */
  lost_by: PolicyRule | null
}

export interface ClaimEntry {
  /** `<subtask_id>#<index in that result's claims>`. */
  claim_ref: string
  subtask_id: string
  revision: number
  position_id: string
  confidence: number | null
  /** As submitted. */
  sources: ClaimSource[]
  /** The claim's subtask does not own the fact; it is counted like any other claim. */
  out_of_scope: boolean
}

/** One of the position fields two positions can differ in. */
export type PositionField = 'effective_date' | 'qualifiers' | 'value'

/**
 * A qualifier that differs between two positions: `a`/`b` are its values on each side; a side
 * without the key omits its member, which makes the entry a carve-out.
 */
export type QualifierDifference = JsonDifference

export interface Conflict {
  /** The lower-numbered position. */
  a: string
  b: string
  /** Alphabetical. */
  differs: PositionField[]
  /** Sorted by pointer. */
  qualifier_differences: QualifierDifference[]
}

/** A source cited by claims of two or more subtasks. */
export interface Echo {
  /** The source identity: content digest or normalised URI. */
  source: string
  /** Every claim citing it, sorted. */
  claims: string[]
}

/** Under `keep_all`, one qualifier set's own reconciliation. */
export interface Variant {
  qualifiers: Qualifiers
  status: 'agreed' | 'resolved' | 'contested'
  answer: Position | null
  rule: PolicyRule | null
  reason: ContestedReason | null
}

export interface FactEntry {
  fact: string
  status: FactStatus
  answer: Position | null
  /** Sorted by `JCS(qualifiers)`; `[]` unless positions were reconciled per qualifier set. */
  variants: Variant[]
  rule: AnswerRule | null
  reason: ContestedReason | null
  positions: PositionEntry[]
  claims: ClaimEntry[]
  conflicts: Conflict[]
  echoes: Echo[]
}

export interface SubtaskCoverage {
  subtask_id: string
  status: CoverageStatus
  revision: number | null
  received_at: string | null
  late: boolean
  result_digest: string | null
}

export interface Coverage {
  subtasks: SubtaskCoverage[]
  missing_subtasks: string[]
  late_subtasks: string[]
  needs_context: { subtask_id: string; blocking_question: string | null }[]
  blocked: { subtask_id: string; blocking_reason: string | null }[]
  concerns: { subtask_id: string; concerns: string[] }[]
  /** Facts without any claim (whatever the decomposition said). */
  uncovered_facts: string[]
  /** Facts owned by two or more subtasks, as checked at creation. */
  overlaps: Overlap[]
}

export interface Reason {
  code: ReasonCode
  /** A subtask id (needs_context, blocked, missing_subtask) or a fact. */
  subject: string
}

/** The decided content of a reconciliation manifest. */
export interface ReconciliationDecision {
  kind: 'decided'
  verdict: Exclude<FanoutVerdict, 'HUMAN_RESOLVED'>
  directive: FanoutDirective
  /** False only for REEVALUATE: a worker is waiting for an answer and will return again. */
  final: boolean
  coverage: Coverage
  facts: FactEntry[]
  reasons: Reason[]
}

export type Reconciliation = { kind: 'pending'; missing_subtasks: string[] } | ReconciliationDecision

// ---------------------------------------------------------------------------
// Positions

function compareText(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0
}

/** A claim's (or an answer's) position, with the absent members filled in. */
export function positionOf(claim: {
  value: JsonValue
  effective_date?: string | null | undefined
  qualifiers?: Qualifiers | undefined
}): Position {
  return {
    value: claim.value,
    effective_date: claim.effective_date ?? null,
    qualifiers: claim.qualifiers ?? {},
  }
}

/** A claim of one fact, with where it came from. */
interface LocatedClaim {
  ref: string
  subtask_id: string
  revision: number
  out_of_scope: boolean
  claim: SubmittedClaim
}

/** A position while it is being reconciled. */
interface WorkingPosition extends Position {
  id: string
  /** Canonical text of each compared part, so conflicts compare strings. */
  valueText: string
  qualifiersText: string
  claimIndices: number[]
  claims: SubmittedClaim[]
  independent_sources: number
  lost_by: PolicyRule | null
}

function groupIntoPositions(claims: readonly LocatedClaim[]): WorkingPosition[] {
  const byText = new Map<string, { position: Position; claimIndices: number[] }>()
  claims.forEach((located, index) => {
    const text = canonicalJson(positionOf(located.claim))
    const group = byText.get(text)
    // Read back from the canonical text, so that which of several JCS-equal spellings arrived
    // first does not even decide the key order the manifest is written with.
    if (group === undefined)
      byText.set(text, { position: JSON.parse(text) as Position, claimIndices: [index] })
    else group.claimIndices.push(index)
  })
  return [...byText.keys()].sort(compareText).map((text, i) => {
    const { position, claimIndices } = byText.get(text)!
    return {
      ...position,
      id: `p${i + 1}`,
      valueText: canonicalJson(position.value),
      qualifiersText: canonicalJson(position.qualifiers),
      claimIndices,
      claims: claimIndices.map((index) => claims[index]!.claim),
      independent_sources: 0,
      lost_by: null,
    }
  })
}

function conflictBetween(a: WorkingPosition, b: WorkingPosition): Conflict {
  const differs: PositionField[] = []
  if (a.effective_date !== b.effective_date) differs.push('effective_date')
  const qualifiersDiffer = a.qualifiersText !== b.qualifiersText
  if (qualifiersDiffer) differs.push('qualifiers')
  if (a.valueText !== b.valueText) differs.push('value')
  return {
    a: a.id,
    b: b.id,
    differs,
    qualifier_differences: qualifiersDiffer ? diffJson(a.qualifiers, b.qualifiers) : [],
  }
}

/** Every pair of positions, lower number first; the one quadratic step (see the module comment). */
function conflictsAmong(positions: readonly WorkingPosition[]): Conflict[] {
  const conflicts: Conflict[] = []
  for (let i = 0; i < positions.length; i++) {
    for (let j = i + 1; j < positions.length; j++)
      conflicts.push(conflictBetween(positions[i]!, positions[j]!))
  }
  return conflicts
}

function echoesAmong(claims: readonly LocatedClaim[], citations: Map<string, number[]>): Echo[] {
  const echoes: Echo[] = []
  for (const [source, indices] of citations) {
    const subtasks = new Set(indices.map((index) => claims[index]!.subtask_id))
    if (subtasks.size >= 2) echoes.push({ source, claims: sortedUnique(indices.map((i) => claims[i]!.ref)) })
  }
  return echoes.sort((x, y) => compareText(x.source, y.source))
}

// ---------------------------------------------------------------------------
// Choosing

interface GroupOutcome {
  status: 'agreed' | 'resolved' | 'contested'
  winner: WorkingPosition | null
  rule: PolicyRule | null
  reason: ContestedReason | null
}

/**
 * Reconciles positions that share their qualifiers: one position is agreed; otherwise the policy's
 * rules choose, and the losers are marked with the deciding rule. An answer resting on fewer
 * independent sources than the policy asks for is withdrawn, and with it every `lost_by`: nothing
 * was decided against positions that only lost to an answer that does not stand.
 */
function reconcileGroup(positions: readonly WorkingPosition[], policy: FanoutPolicy): GroupOutcome {
  let outcome: GroupOutcome
  if (positions.length === 1) {
    outcome = { status: 'agreed', winner: positions[0]!, rule: null, reason: null }
  } else {
    const choice = choosePosition(positions, policy.resolve, policy.source_priority)
    if (choice === null) return { status: 'contested', winner: null, rule: null, reason: 'no_rule_decides' }
    for (const position of positions) if (position !== choice.winner) position.lost_by = choice.rule
    outcome = { status: 'resolved', winner: choice.winner, rule: choice.rule, reason: null }
  }
  if (outcome.winner!.independent_sources < policy.min_independent_sources) {
    for (const position of positions) position.lost_by = null
    return { status: 'contested', winner: null, rule: null, reason: 'insufficient_corroboration' }
  }
  return outcome
}

function answerOf(position: WorkingPosition | null): Position | null {
  if (position === null) return null
  return { value: position.value, effective_date: position.effective_date, qualifiers: position.qualifiers }
}

type FactVerdict = Pick<FactEntry, 'status' | 'answer' | 'variants' | 'rule' | 'reason'>

function decideFact(positions: readonly WorkingPosition[], policy: FanoutPolicy): FactVerdict {
  const bySet = new Map<string, WorkingPosition[]>()
  for (const position of positions) {
    const set = bySet.get(position.qualifiersText)
    if (set === undefined) bySet.set(position.qualifiersText, [position])
    else set.push(position)
  }

  if (bySet.size === 1) {
    const outcome = reconcileGroup(positions, policy)
    return {
      status: outcome.status,
      answer: answerOf(outcome.winner),
      variants: [],
      rule: outcome.rule,
      reason: outcome.reason,
    }
  }
  if (policy.on_qualifier_difference === 'halt') {
    return { status: 'contested', answer: null, variants: [], rule: null, reason: 'qualifier_difference' }
  }
  // keep_all: statements about different populations can all be true, so each qualifier set
  // gets its own answer instead of competing with the others.
  const variants: Variant[] = [...bySet.keys()].sort(compareText).map((text) => {
    const group = bySet.get(text)!
    const outcome = reconcileGroup(group, policy)
    return {
      qualifiers: group[0]!.qualifiers,
      status: outcome.status,
      answer: answerOf(outcome.winner),
      rule: outcome.rule,
      reason: outcome.reason,
    }
  })
  const firstContested = variants.find((variant) => variant.status === 'contested')
  return {
    status: firstContested ? 'contested' : 'scoped',
    answer: null,
    variants,
    rule: null,
    reason: firstContested ? firstContested.reason : null,
  }
}

/** Too many positions to compare, or more pairs than the manifest has left: contested before any rule. */
function tooManyPositions(): FactVerdict {
  return { status: 'contested', answer: null, variants: [], rule: null, reason: 'too_many_positions' }
}

/** Pairs the manifest may still list, handed out to facts in fact order. */
interface PairBudget {
  left: number
}

/**
 * Whether the fact's positions are compared: no more than MAX_COMPARED_POSITIONS of them, and their pairs
 * within what the manifest has left (taken from it when they are).
 */
function takePairs(positionCount: number, budget: PairBudget): boolean {
  if (positionCount > MAX_COMPARED_POSITIONS) return false
  const pairs = (positionCount * (positionCount - 1)) / 2
  if (pairs > budget.left) return false
  budget.left -= pairs
  return true
}

/** Reconciles one fact from every claim made about it. */
function reconcileFact(
  fact: string,
  claims: readonly LocatedClaim[],
  policy: FanoutPolicy,
  budget: PairBudget,
): FactEntry {
  if (claims.length === 0) {
    return {
      fact,
      status: 'unclaimed',
      answer: null,
      variants: [],
      rule: null,
      reason: null,
      positions: [],
      claims: [],
      conflicts: [],
      echoes: [],
    }
  }
  const positions = groupIntoPositions(claims)
  // Clusters span every claim of the fact: a claim of another position can join two sources.
  const { clusterOf, citations } = clusterClaimsBySource(claims.map((located) => located.claim))
  for (const position of positions)
    position.independent_sources = countClusters(clusterOf, position.claimIndices)
  const positionIdOf = new Array<string>(claims.length)
  for (const position of positions)
    for (const index of position.claimIndices) positionIdOf[index] = position.id

  const compared = takePairs(positions.length, budget)
  const verdict = compared ? decideFact(positions, policy) : tooManyPositions()
  return {
    fact,
    ...verdict,
    positions: positions.map((position) => ({
      position_id: position.id,
      value: position.value,
      effective_date: position.effective_date,
      qualifiers: position.qualifiers,
      claims: sortedUnique(position.claimIndices.map((index) => claims[index]!.ref)),
      independent_sources: position.independent_sources,
      lost_by: position.lost_by,
    })),
    claims: claims
      .map((located, index) => ({
        claim_ref: located.ref,
        subtask_id: located.subtask_id,
        revision: located.revision,
        position_id: positionIdOf[index]!,
        confidence: located.claim.confidence ?? null,
        sources: located.claim.sources.map((source) => ({ ...source })),
        out_of_scope: located.out_of_scope,
      }))
      .sort((x, y) => compareText(x.claim_ref, y.claim_ref)),
    conflicts: compared ? conflictsAmong(positions) : [],
    echoes: echoesAmong(claims, citations),
  }
}

// ---------------------------------------------------------------------------
// The fan-out

/**
 * Refuses inputs the caller promised never to send; choosing silently would make the result depend
 * on input order, or count a claim the fan-out never asked about.
 */
function assertConsistent(input: ReconcileInput): void {
  const subtasks = new Set(input.fanout.subtasks.map((subtask) => subtask.subtask_id))
  const facts = new Set(input.fanout.facts)
  const seen = new Set<string>()
  for (const result of input.results) {
    if (!subtasks.has(result.subtask_id)) {
      throw new RangeError(`result for unknown subtask ${JSON.stringify(result.subtask_id)}`)
    }
    if (seen.has(result.subtask_id)) {
      throw new RangeError(`two results for subtask ${JSON.stringify(result.subtask_id)}`)
    }
    seen.add(result.subtask_id)
    for (const claim of result.claims) {
      if (!facts.has(claim.fact))
        throw new RangeError(`claim about unknown fact ${JSON.stringify(claim.fact)}`)
    }
  }
}

function claimsByFact(input: ReconcileInput, results: readonly SubtaskResult[]): Map<string, LocatedClaim[]> {
  const owned = new Map(input.fanout.subtasks.map((subtask) => [subtask.subtask_id, new Set(subtask.facts)]))
  const byFact = new Map<string, LocatedClaim[]>(input.fanout.facts.map((fact) => [fact, []]))
  for (const result of results) {
    result.claims.forEach((claim, index) => {
      byFact.get(claim.fact)!.push({
        ref: `${result.subtask_id}#${index}`,
        subtask_id: result.subtask_id,
        revision: result.revision,
        out_of_scope: !owned.get(result.subtask_id)!.has(claim.fact),
        claim,
      })
    })
  }
  return byFact
}

function bySubtaskId<T extends { subtask_id: string }>(items: T[]): T[] {
  return items.sort((x, y) => compareText(x.subtask_id, y.subtask_id))
}

function buildCoverage(
  input: ReconcileInput,
  results: readonly SubtaskResult[],
  missing: readonly string[],
  facts: readonly FactEntry[],
): Coverage {
  const missingCoverage = missing.map(
    (subtask_id): SubtaskCoverage => ({
      subtask_id,
      status: 'MISSING',
      revision: null,
      received_at: null,
      late: false,
      result_digest: null,
    }),
  )
  const returned = results.map(
    (result): SubtaskCoverage => ({
      subtask_id: result.subtask_id,
      status: result.status,
      revision: result.revision,
      received_at: result.received_at,
      late: result.late,
      result_digest: result.result_digest,
    }),
  )
  return {
    subtasks: bySubtaskId([...returned, ...missingCoverage]),
    missing_subtasks: [...missing],
    late_subtasks: results.filter((result) => result.late).map((result) => result.subtask_id),
    needs_context: results
      .filter((result) => result.status === 'NEEDS_CONTEXT')
      .map((result) => ({ subtask_id: result.subtask_id, blocking_question: result.blocking_question })),
    blocked: results
      .filter((result) => result.status === 'BLOCKED')
      .map((result) => ({ subtask_id: result.subtask_id, blocking_reason: result.blocking_reason })),
    concerns: results
      .filter((result) => result.concerns.length > 0)
      .map((result) => ({ subtask_id: result.subtask_id, concerns: [...result.concerns] })),
    uncovered_facts: facts.filter((fact) => fact.status === 'unclaimed').map((fact) => fact.fact),
    overlaps: checkDecomposition(input.fanout.facts, input.fanout.subtasks).overlaps,
  }
}

function buildReasons(coverage: Coverage, facts: readonly FactEntry[]): Reason[] {
  const reasons: Reason[] = [
    ...coverage.needs_context.map(({ subtask_id }) => ({
      code: 'needs_context' as const,
      subject: subtask_id,
    })),
    ...coverage.blocked.map(({ subtask_id }) => ({ code: 'blocked' as const, subject: subtask_id })),
    ...coverage.missing_subtasks.map((subject) => ({ code: 'missing_subtask' as const, subject })),
    ...coverage.uncovered_facts.map((subject) => ({ code: 'uncovered_fact' as const, subject })),
    ...facts
      .filter((fact) => fact.status === 'contested')
      .map((fact) => ({ code: 'contested_fact' as const, subject: fact.fact })),
  ]
  return reasons.sort((x, y) => compareText(x.code, y.code) || compareText(x.subject, y.subject))
}

type Outcome = Pick<ReconciliationDecision, 'verdict' | 'directive' | 'final'>

/**
 * A worker waiting for an answer comes first: answering it may change everything else. Then, unless
 * the policy says to proceed regardless, a hole in coverage halts; then any contested fact halts.
 */
function decideOutcome(policy: FanoutPolicy, coverage: Coverage, facts: readonly FactEntry[]): Outcome {
  if (coverage.needs_context.length > 0)
    return { verdict: 'INCOMPLETE', directive: 'REEVALUATE', final: false }
  const incomplete =
    coverage.blocked.length > 0 || coverage.missing_subtasks.length > 0 || coverage.uncovered_facts.length > 0
  if (policy.on_incomplete === 'halt' && incomplete) {
    return { verdict: 'INCOMPLETE', directive: 'HALT', final: true }
  }
  if (facts.some((fact) => fact.status === 'contested')) {
    return { verdict: 'CONTESTED', directive: 'HALT', final: true }
  }
  return { verdict: 'RECONCILED', directive: 'PROCEED', final: true }
}

/**
 * Reconciles a fan-out. Pending — `{kind: 'pending', missing_subtasks}` — while a subtask has not
 * returned, unless the deadline has passed or the owner closed the fan-out (with no deadline, only
 * closing stops the wait). Otherwise the manifest's decided content: every fact, in fact order, with
 * its positions, claims, conflicts (within the bounds above) and echoes; the coverage of the subtasks; the reasons; and the
 * verdict and directive they lead to.
 *
 * Throws a RangeError for a result of an unknown subtask, two results of one subtask, or a claim
 * about a fact the fan-out does not list: the caller refuses those before they are stored.
 */
export function reconcile(input: ReconcileInput): Reconciliation {
  assertConsistent(input)
  const results = bySubtaskId([...input.results])
  const returned = new Set(results.map((result) => result.subtask_id))
  const missing = sortedUnique(input.fanout.subtasks.map((subtask) => subtask.subtask_id)).filter(
    (id) => !returned.has(id),
  )
  if (missing.length > 0 && !input.deadline_passed && !input.closed) {
    return { kind: 'pending', missing_subtasks: missing }
  }

  const policy = input.fanout.policy
  const claims = claimsByFact(input, results)
  const budget: PairBudget = { left: MAX_LISTED_CONFLICTS }
  const facts = sortedUnique(input.fanout.facts).map((fact) =>
    reconcileFact(fact, claims.get(fact)!, policy, budget),
  )
  const coverage = buildCoverage(input, results, missing, facts)
  const reasons = buildReasons(coverage, facts)
  return { kind: 'decided', ...decideOutcome(policy, coverage, facts), coverage, facts, reasons }
}
