import { caseViews, latestOfEach } from '../../db/case-views.ts'
import { isoText } from '../../db/iso-text.ts'
import type { Statement } from '../../db/statement.ts'
import type { EvidenceItem } from '../../domain/outcome/evidence.ts'
import type { ManifestInterpretation } from '../../domain/outcome/interpretation.ts'
import type { OutcomeStatus } from '../../domain/outcome/vocabulary.ts'
import { OUTCOME_COLUMNS, type OutcomeRow } from './repository.ts'

/**
 * An outcome as GET /v1/outcomes shows it, read in one statement: its row, its evidence versions (oldest first),
 * its items (in order) and each orchestrator's latest interpretation (in no particular order), the times already
 * in the API's form.
 */
export interface OutcomeViewRow extends OutcomeRow {
  evidence_versions: { evidence_hash: string; item_hashes: string[]; created_at: string }[]
  evidence: EvidenceItem[]
  interpretations: ManifestInterpretation[]
}

const OUTCOME_VIEW_COLUMNS = `${OUTCOME_COLUMNS},
  (SELECT coalesce(json_agg(json_build_object('evidence_hash', v.evidence_hash, 'item_hashes', v.item_hashes,
            'created_at', ${isoText('v.created_at')}) ORDER BY v.version), '[]')
   FROM evidence_versions v WHERE v.outcome_id = o.id) AS evidence_versions,
  (SELECT coalesce(json_agg(e.item ORDER BY e.position), '[]')
   FROM evidence_items e WHERE e.outcome_id = o.id) AS evidence,
  ${latestOfEach({
    table: 'interpretations',
    parent: 'outcome_id',
    caseId: 'o.id',
    key: 'orchestrator_id',
    latest: 'revision',
    columns: [
      'orchestrator_id',
      'success_criterion_signature',
      'outcome_interpretation',
      'evidence_hash',
      'intended_action',
      'revision',
    ],
    times: ['received_at'],
  })} AS interpretations`

/**
 * Outcomes as shown, one or a page bounded in bytes: an outcome's size is its evidence items, its evidence versions'
 * item hashes and its interpretations, and a fixed part for its own columns.
 */
const VIEWS = caseViews<OutcomeViewRow>({
  table: 'outcomes',
  alias: 'o',
  owner: 'subagent_id',
  columns: OUTCOME_VIEW_COLUMNS,
  itemBytes: `2048
    + coalesce((SELECT sum(octet_length(e.item::text)) FROM evidence_items e WHERE e.outcome_id = o.id), 0)
    + coalesce((SELECT sum(120 + 74 * cardinality(v.item_hashes)) FROM evidence_versions v
                WHERE v.outcome_id = o.id), 0)
    + coalesce((SELECT sum(500 + coalesce(octet_length(i.intended_action::text), 0)) FROM interpretations i
                WHERE i.outcome_id = o.id), 0)`,
})

/** One outcome as shown (see OutcomeViewRow), in one round trip. */
export function outcomeView(id: string): Statement<OutcomeViewRow> {
  return VIEWS.one(id)
}

/** A page of outcomes as shown (see OutcomeViewRow), in creation order after `afterSeq`, in one round trip. */
export function outcomeViewsPage(
  filter: { subagentId?: string | undefined; status?: OutcomeStatus | undefined; afterSeq: number | null },
  limit: number,
): Statement<OutcomeViewRow> {
  return VIEWS.page({ owner: filter.subagentId, status: filter.status, afterSeq: filter.afterSeq }, limit)
}
