/**
 * The panel rules a review is checked against when it is created: how many judges each mode takes, where
 * `stage` and `role` belong, and the independence rules (the iron law, fresh contexts, distinct council
 * models). Every violation is reported, not just the first, so the caller fixes its panel in one round trip.
 */
import { type AgentIdentity, identityKey } from '../shared/agent-identity.ts'
import type { DebateRole, JudgeStage, ReviewMode } from './vocabulary.ts'

/**
 * A judge as the creation request carried it. `stage` and `role` distinguish absent (undefined) from null:
 * a null stage or role still counts as present where the mode does not allow one.
 */
export interface SubmittedJudge {
  judge_id: string
  model: string
  context_id: string
  stage?: JudgeStage | null
  role?: DebateRole | null
}

/** A judge as stored and returned: exactly these keys, absent `stage`/`role` as null. */
export interface ReviewJudge {
  judge_id: string
  model: string
  context_id: string
  stage: JudgeStage | null
  role: DebateRole | null
}

export interface PanelInput {
  mode: ReviewMode
  implementer: AgentIdentity
  judges: readonly SubmittedJudge[]
}

/** The rules, in the order their violations are listed for one judge. */
export const PANEL_RULES = [
  'judge_count',
  'stage_outside_two_stage',
  'role_outside_debate',
  'stage_required',
  'stage_taken',
  'role_required',
  'debate_judge_count',
  'meta_count',
  'duplicate_judge_id',
  'council_models_distinct',
  'shared_context',
  'iron_law',
] as const
export type PanelRule = (typeof PANEL_RULES)[number]

export interface PanelViolation {
  /** `/judges/<i>`: the offending judge, or, when judges are missing, the index the next one would take. */
  path: string
  message: string
  rule: PanelRule
}

export interface PanelCheck {
  /** Sorted by judge index, then by {@link PANEL_RULES} order. Empty when the panel is valid. */
  violations: PanelViolation[]
  /** True when a judge shares the implementer's model and context: the caller reports "judge not independent". */
  iron_law_violated: boolean
}

/** The largest council, and so the largest panel of any mode. */
export const MAX_COUNCIL_JUDGES = 10
const MIN_COUNCIL_JUDGES = 2

/** The stored form of a submitted judge: exactly the five keys, absent ones null. */
export function toReviewJudge(judge: SubmittedJudge): ReviewJudge {
  return {
    judge_id: judge.judge_id,
    model: judge.model,
    context_id: judge.context_id,
    stage: judge.stage ?? null,
    role: judge.role ?? null,
  }
}

/** Checks a panel against its mode's rules and the independence rules; returns every violation. */
export function checkPanel(input: PanelInput): PanelCheck {
  if (input.judges.length > MAX_COUNCIL_JUDGES) return oversizedPanel(input)
  const violations: PanelViolation[] = [
    ...countViolations(input.mode, input.judges),
    ...placementViolations(input.mode, input.judges),
    ...(input.mode === 'two_stage' ? stageViolations(input.judges) : []),
    ...(input.mode === 'debate' ? roleViolations(input.judges) : []),
    ...independenceViolations(input),
  ]
  violations.sort((x, y) => indexOf(x) - indexOf(y) || ruleOrder(x.rule) - ruleOrder(y.rule))
  return { violations, iron_law_violated: violations.some((v) => v.rule === 'iron_law') }
}

/**
 * A panel of more judges than any mode takes is refused on its size alone, with one violation: the caller must
 * cut it down whatever else is wrong with it, and a body of thousands of judges must not buy an answer listing
 * thousands of violations.
 */
function oversizedPanel(input: PanelInput): PanelCheck {
  const takes =
    input.mode === 'debate'
      ? 'two judges with role "judge" and at most one "meta"'
      : MODE_SIZES[input.mode].wording
  const message = `judge count: ${input.mode} takes ${takes}; ${input.judges.length} given (no panel takes more than ${MAX_COUNCIL_JUDGES})`
  return { violations: [violation(MAX_COUNCIL_JUDGES, 'judge_count', message)], iron_law_violated: false }
}

function violation(index: number, rule: PanelRule, message: string): PanelViolation {
  return { path: `/judges/${index}`, message, rule }
}

function indexOf(v: PanelViolation): number {
  return Number(v.path.slice('/judges/'.length))
}

function ruleOrder(rule: PanelRule): number {
  return PANEL_RULES.indexOf(rule)
}

function named(judge: SubmittedJudge): string {
  return `judge ${JSON.stringify(judge.judge_id)}`
}

/** Panel sizes of the modes whose size is a plain count. */
const MODE_SIZES: Record<Exclude<ReviewMode, 'debate'>, { min: number; max: number; wording: string }> = {
  do_and_judge: { min: 1, max: 1, wording: 'exactly one judge' },
  two_stage: { min: 2, max: 2, wording: 'exactly two judges (stage 1 and stage 2)' },
  council: {
    min: MIN_COUNCIL_JUDGES,
    max: MAX_COUNCIL_JUDGES,
    wording: `${MIN_COUNCIL_JUDGES} to ${MAX_COUNCIL_JUDGES} judges`,
  },
}

/**
 * Panel size for the modes whose size is a plain count (debate is counted by role instead). Extra judges are
 * flagged one by one; a shortfall is flagged once, at the index the first missing judge would take.
 */
function countViolations(mode: ReviewMode, judges: readonly SubmittedJudge[]): PanelViolation[] {
  if (mode === 'debate') return []
  const { min, max, wording } = MODE_SIZES[mode]
  if (judges.length < min) {
    return [
      violation(
        judges.length,
        'judge_count',
        `judge count: ${mode} takes ${wording}; ${judges.length} given`,
      ),
    ]
  }
  return judges
    .slice(max)
    .map((judge, extra) =>
      violation(
        max + extra,
        'judge_count',
        `judge count: ${mode} takes ${wording}; ${named(judge)} is one too many`,
      ),
    )
}

/** `stage` belongs to two_stage judges only, `role` to debate judges only; null counts as present. */
function placementViolations(mode: ReviewMode, judges: readonly SubmittedJudge[]): PanelViolation[] {
  const found: PanelViolation[] = []
  judges.forEach((judge, i) => {
    if (mode !== 'two_stage' && judge.stage !== undefined) {
      found.push(
        violation(
          i,
          'stage_outside_two_stage',
          `stage only in two_stage: ${named(judge)} carries a stage (${JSON.stringify(judge.stage)}) in a ${mode} review`,
        ),
      )
    }
    if (mode !== 'debate' && judge.role !== undefined) {
      found.push(
        violation(
          i,
          'role_outside_debate',
          `role only in debate: ${named(judge)} carries a role (${JSON.stringify(judge.role)}) in a ${mode} review`,
        ),
      )
    }
  })
  return found
}

/** two_stage: every judge has a stage, and stages 1 and 2 are each taken once. */
function stageViolations(judges: readonly SubmittedJudge[]): PanelViolation[] {
  const found: PanelViolation[] = []
  const holder = new Map<JudgeStage, SubmittedJudge>()
  judges.forEach((judge, i) => {
    const stage = judge.stage ?? null
    if (stage === null) {
      found.push(
        violation(
          i,
          'stage_required',
          `stage required: ${named(judge)} has no stage (two_stage needs 1 or 2)`,
        ),
      )
      return
    }
    const first = holder.get(stage)
    if (first === undefined) {
      holder.set(stage, judge)
      return
    }
    found.push(
      violation(
        i,
        'stage_taken',
        `one judge per stage: ${named(judge)} is a second stage-${stage} judge after ${named(first)}`,
      ),
    )
  })
  return found
}

/** debate: every judge carries a role; exactly two `judge`s and at most one `meta`. */
function roleViolations(judges: readonly SubmittedJudge[]): PanelViolation[] {
  const found: PanelViolation[] = []
  const deciding: SubmittedJudge[] = []
  const metas: SubmittedJudge[] = []
  judges.forEach((judge, i) => {
    const role = judge.role ?? null
    if (role === null) {
      found.push(
        violation(
          i,
          'role_required',
          `role required: ${named(judge)} has no role (debate needs judge or meta)`,
        ),
      )
    } else if (role === 'judge') {
      deciding.push(judge)
      if (deciding.length > 2) {
        found.push(
          violation(
            i,
            'debate_judge_count',
            `debate judge count: debate takes exactly two judges with role "judge"; ${named(judge)} is one too many`,
          ),
        )
      }
    } else {
      metas.push(judge)
      if (metas.length > 1) {
        found.push(
          violation(
            i,
            'meta_count',
            `at most one meta-judge: ${named(judge)} is a second meta-judge after ${named(metas[0]!)}`,
          ),
        )
      }
    }
  })
  if (deciding.length < 2) {
    found.push(
      violation(
        judges.length,
        'debate_judge_count',
        `debate judge count: debate takes exactly two judges with role "judge"; ${deciding.length} given`,
      ),
    )
  }
  return found
}

/**
 * Independence, in every mode: unique judge ids, a fresh context for every judge, distinct models in a
 * council (its findings are worth something only if the models differ), and the iron law — no judge on
 * the implementer's model *and* context, which would share the implementer's blind spots.
 */
function independenceViolations(input: PanelInput): PanelViolation[] {
  const found: PanelViolation[] = []
  const { judges, implementer, mode } = input
  // The first judge of each id, model and model-and-context: one pass, so a panel of any size costs linear time.
  const firstById = new Map<string, number>()
  const firstByModel = new Map<string, SubmittedJudge>()
  const firstByModelAndContext = new Map<string, SubmittedJudge>()
  const implementerKey = agentKey(implementer)
  judges.forEach((judge, i) => {
    const sameId = firstById.get(judge.judge_id)
    if (sameId === undefined) firstById.set(judge.judge_id, i)
    else {
      found.push(
        violation(
          i,
          'duplicate_judge_id',
          `unique judge_id: ${named(judge)} is already used by /judges/${sameId}`,
        ),
      )
    }
    const model = identityKey(judge.model)
    const sameModelJudge = firstByModel.get(model)
    if (sameModelJudge === undefined) firstByModel.set(model, judge)
    else if (mode === 'council') {
      found.push(
        violation(
          i,
          'council_models_distinct',
          `distinct council models: ${named(judge)} runs on model ${JSON.stringify(model)} like ${named(sameModelJudge)}`,
        ),
      )
    }
    const key = agentKey(judge)
    const sameContextJudge = firstByModelAndContext.get(key)
    if (sameContextJudge === undefined) firstByModelAndContext.set(key, judge)
    else {
      found.push(
        violation(
          i,
          'shared_context',
          `fresh context per judge: ${named(judge)} runs on the same model and context as ${named(sameContextJudge)}`,
        ),
      )
    }
    if (key === implementerKey) {
      found.push(
        violation(
          i,
          'iron_law',
          `iron law: ${named(judge)} runs on the implementer's model (${JSON.stringify(implementer.model)}) and context (${JSON.stringify(implementer.context_id)}); a judge needs another model or a fresh context`,
        ),
      )
    }
  })
  return found
}

/**
 * One string per (model, context) identity pair. JSON keeps the pair apart whatever the texts hold, so no model
 * and context can run together into another pair's key.
 */
function agentKey(agent: AgentIdentity): string {
  return JSON.stringify([identityKey(agent.model), identityKey(agent.context_id)])
}
