import type { CaseRef } from '../../domain/vocabulary.ts'
import { type Statement, statement } from '../statement.ts'

/**
 * probe_runs: one ground-truth probe execution per case and evaluation round (inputs_digest), claimed before it
 * runs so concurrent evaluations run it once. case_kind + case_id; inputs_digest; claimed_until (a claim whose
 * holder died expires); record (the execution, once it ran).
 */
export interface ProbeRunRow {
  claimed_until: Date
  record: unknown | null
}

/** The case and evaluation round a probe run belongs to. */
export interface ProbeRunKey {
  case: CaseRef
  inputsDigest: string
}

export function probeRunByKey(key: ProbeRunKey): Statement<ProbeRunRow> {
  return statement(
    `SELECT claimed_until, record FROM probe_runs
     WHERE case_kind = $1 AND case_id = $2 AND inputs_digest = $3`,
    [key.case.kind, key.case.id, key.inputsDigest],
  )
}

/** Claims the run until `until` (a claim whose holder died expires); a run that has its record stays as it is. */
export function probeRunClaim(key: ProbeRunKey, until: Date): Statement {
  return statement(
    `INSERT INTO probe_runs (case_kind, case_id, inputs_digest, claimed_until) VALUES ($1, $2, $3, $4)
     ON CONFLICT (case_kind, case_id, inputs_digest) DO UPDATE SET claimed_until = EXCLUDED.claimed_until
     WHERE probe_runs.record IS NULL`,
    [key.case.kind, key.case.id, key.inputsDigest, until],
  )
}

export function probeRunRecordStore(key: ProbeRunKey, record: unknown): Statement {
  return statement(
    `UPDATE probe_runs SET record = $4::jsonb
     WHERE case_kind = $1 AND case_id = $2 AND inputs_digest = $3 AND record IS NULL`,
    [key.case.kind, key.case.id, key.inputsDigest, JSON.stringify(record)],
  )
}

/** Ends a claim early (its holder failed), so the next evaluation runs the probe again. */
export function probeRunRelease(key: ProbeRunKey): Statement {
  return statement(
    `UPDATE probe_runs SET claimed_until = now() - interval '1 second'
     WHERE case_kind = $1 AND case_id = $2 AND inputs_digest = $3 AND record IS NULL`,
    [key.case.kind, key.case.id, key.inputsDigest],
  )
}
