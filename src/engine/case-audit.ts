import type { AuditEntry } from '../audit-log/append.ts'
import type { AuditSubject } from './case-kind.ts'

/** An audit entry about a case: the case's ids filled in, its `data` members merged under the entry's own. */
export function caseAuditEntry(subject: AuditSubject, entry: AuditEntry): AuditEntry {
  return {
    outcome_id: subject.outcome_id ?? null,
    subagent_id: subject.subagent_id ?? null,
    orchestrator_id: subject.orchestrator_id ?? null,
    ...entry,
    data: { ...subject.data, ...entry.data },
  }
}
