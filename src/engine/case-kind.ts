import type { AuditData } from '../audit-log/append.ts'
import type { AuditQuery } from '../audit-log/reads.ts'
import type { Queryable } from '../db/pool.ts'
import type { ProbeRow } from '../db/repositories/probes.ts'
import type { Statement } from '../db/statement.ts'
import type { GroundTruthRecord } from '../probes/probe-runner.ts'

/**
 * A function a worker thread can import: its module's URL (file URL, as `import()` takes it) and its export's
 * name. `moduleBeside` of src/engine/decision-workers.ts writes one for a module beside the kind's.
 */
export interface DecisionModule {
  url: string
  name: string
}

/**
 * A kind of disagreement Arbiter settles (an outcome, a fan-out, a review), as the engine sees it. The engine owns
 * what every kind shares — the lock per case, deciding once per step, issuing one signed manifest into one feed,
 * the escalation and the resolution, the audit records — and calls these functions for what differs. A kind's
 * own routes, schemas and tables sit beside its implementation (src/cases/<kind>/); see docs/architecture.md.
 *
 * `Case` is the kind's locked row, `Input` what its decision reads, `Content` its manifest's own fields and
 * `Pending` what a 202 answer names while the decision waits, `Resolution` what a human answers to a HALT,
 * `Request` what the caller of an evaluation may add (a fan-out's `{"close": true}`; nothing for most kinds).
 */
export interface CaseKind<
  Case,
  Input,
  Content extends ManifestContent,
  Pending,
  Resolution = never,
  Request = undefined,
> {
  /** The `case_kind` of its rows and the `case` of its escalations: `outcome`, `fanout`, `review`. */
  readonly name: string
  /** The `kind` its manifests carry: `outcome`, `reconciliation`, `review`. */
  readonly manifestKind: string
  /** How messages name a case: "no outcome <id>". */
  readonly noun: string

  /** Reads the case FOR UPDATE inside `tx` (undefined when unknown). This row lock serializes the case. */
  lock(tx: Queryable, id: string): Promise<Case | undefined>
  /** Reads the case without locking it. */
  find(db: Queryable, id: string): Promise<Case | undefined>
  /** The case's id. */
  caseId(c: Case): string
  /** The case's status as its API shows it. */
  status(c: Case): string
  /** The manifest the case currently points at, or null. */
  manifestId(c: Case): string | null
  /**
   * The round the case is in: 0 for kinds decided once, a review's revision. A final manifest settles its round;
   * a manifest of an earlier round is not the current one.
   */
  round(c: Case): number
  /** The fields every audit record about this case carries (its ids; `data` members such as `fanout_id`). */
  auditSubject(c: Case): AuditSubject
  /** The audit records that tell this case's story. */
  auditQuery(id: string): AuditQuery

  /**
   * Reads what the decision needs; `now` is the engine's clock (deadlines are judged against it), `request` what
   * this evaluation's caller asked for (undefined when it asked nothing).
   */
  loadInput(tx: Queryable, c: Case, now: Date, request: Request | undefined): Promise<Input>
  /** Fingerprint of the inputs: deciding unchanged inputs again returns the manifest already issued. */
  inputsDigest(c: Case, input: Input): string
  /**
   * The kind's pure decision, called once per evaluation step. `groundTruth` is this round's probe record, null
   * while none has run; answer `needs_ground_truth` to have the engine run the probe and ask again.
   */
  decide(c: Case, input: Input, groundTruth: GroundTruthRecord | null): CaseDecision<Content, Pending>
  /**
   * Present when a large input is decided in a worker thread rather than holding the event loop: `when` is true
   * when deciding `input` is heavy enough (thousands of claims), and `decision` names the module and export of the
   * kind's pure decision, the same function as `decide`, which the worker imports (src/engine/decision-worker.ts).
   * Absent: always decided on the calling thread.
   */
  offload?: {
    when(c: Case, input: Input): boolean
    decision: DecisionModule
  }
  /**
   * The write that moves the case to its state after `decision` (the kind's transition function) and points it at
   * the new manifest; `input` is what the decision was made from (a kind may keep part of it, e.g. a fan-out the
   * owner closed). The engine sends it in the evaluation transaction as one statement with the manifest's own
   * writes (the manifest, its audit records, an escalation), so it must not read what they write.
   */
  recordDecision(c: Case, decision: Decided<Content>, manifestId: string, input: Input): Statement

  /**
   * Present when the kind can be decided without a transaction (see evaluate-case.ts): the first decision of a
   * case is then read, decided and written in three statements (two where `read` brings the inputs) instead of
   * a transaction of five.
   */
  readonly optimistic?: OptimisticDecision<Case, Content, Input>

  /** Present when the kind's decision can ask a ground-truth probe. */
  readonly groundTruth?: GroundTruthSource<Case>
  /** Present when the kind escalates HALTs to a human who resolves them. */
  readonly resolution?: ResolutionHandler<Case, Resolution, Content>
}

/**
 * Deciding without holding the case's lock: the case is read with its row version, and the decision's writes go
 * through only while the row is still at that version. It holds only if every change to what the decision reads
 * writes the case row (a new version): a kind that offers it writes its row with every input it accepts.
 */
export interface OptimisticDecision<Case, Content extends ManifestContent, Input> {
  /**
   * Reads the case (undefined when unknown) and its row version, without locking it; and, when the kind can read
   * them in the same statement, the decision's inputs as `loadInput` would (one round trip fewer).
   */
  read(
    db: Queryable,
    id: string,
    now: Date,
  ): Promise<{ case: Case; version: string; input?: Input } | undefined>
  /**
   * recordDecision's write made conditional: an UPDATE … RETURNING of the case row that changes it only while
   * it is at `version`.
   */
  recordDecisionIf(
    c: Case,
    version: string,
    decision: Decided<Content>,
    manifestId: string,
    input: Input,
  ): Statement
}

/** Fields of the manifest the kind fills; the engine adds `kind`, `manifest_id`, `issued_at` and `supersedes`. */
export interface ManifestContent {
  verdict: string
  directive: string
}

export type CaseDecision<Content extends ManifestContent, Pending> =
  /** Waiting for inputs: the engine answers 202 with `pending`. */
  | { kind: 'pending'; pending: Pending }
  /** Nothing can be decided and nothing is awaited: the engine answers 409 with `detail`. */
  | { kind: 'nothing_to_decide'; detail: string }
  /** Run the case's ground-truth probe, then decide again with its record. */
  | { kind: 'needs_ground_truth' }
  | { kind: 'decided'; decided: Decided<Content> }

export interface Decided<Content extends ManifestContent> {
  content: Content
  /** No further manifest in this round once this one is issued (PROCEED, HALT; a review's REVISE). */
  final: boolean
  /** Open an escalation for a human, its `escalation.opened` record carrying `data`; null otherwise. */
  escalation: { data: AuditData } | null
}

/** The common fields of a case's audit records and of its manifests' `subagent_id` column. */
export interface AuditSubject {
  outcome_id?: string | null
  subagent_id?: string | null
  orchestrator_id?: string | null
  /** Members added to every record's `data` (e.g. `fanout_id`). */
  data?: AuditData
}

/** A ground-truth probe attached to a case. */
export interface GroundTruthSource<Case> {
  /** True when the case names a probe (only then can a probe record exist for a round). */
  attached(c: Case): boolean
  /** The probe version to run now, its params, and the values its URL template may use. */
  prepare(tx: Queryable, c: Case): Promise<GroundTruthRun>
}

export interface GroundTruthRun {
  probe: ProbeRow
  params: Record<string, unknown>
  template: { subagent_id: string; run_id: string } | null
}

/** How a human settles a HALTed case with a final HUMAN_RESOLVED manifest that supersedes the HALT. */
export interface ResolutionHandler<Case, Input, Content extends ManifestContent> {
  /**
   * Refuses (422 AppError) an answer that names what the case does not hold, before the case's state is looked at:
   * a request that is wrong in itself is told so before being told it came at the wrong time.
   */
  checkAnswer?(tx: Queryable, c: Case, input: Input): Promise<void>
  /** The HALT manifest the resolution supersedes; throws a 409 AppError when the case awaits no resolution. */
  haltManifestId(c: Case): string
  /**
   * Pure: the resolution's manifest content, built from the HALT manifest and the human's answer, and the data of
   * its `resolution.recorded` record. May throw a 422 AppError for an answer the case cannot take.
   */
  resolve(c: Case, halt: StoredManifest, input: Input, by: string): { content: Content; data: AuditData }
  /** Moves the case to its resolved state and points it at the resolution manifest. */
  recordResolution(tx: Queryable, c: Case, manifestId: string): Promise<void>
}

/** A stored manifest, parsed: every kind's manifest carries at least these fields. */
export interface StoredManifest {
  manifest_id: string
  verdict: string
  directive: string
  [field: string]: unknown
}
