import { combineWrites, named, type Statement, statement } from '../../db/statement.ts'
import type { EvidenceItem, HashedEvidenceItem } from '../../domain/outcome/evidence.ts'

/*
 * An outcome's evidence: its items and the versions that list them (a new outcome's first ones are written with
 * it, repository.ts).
 */

/** evidence_items: every distinct item of an outcome (by item_hash), in order of first submission. */
export interface EvidenceItemRow {
  item_hash: string
  position: number
  item: EvidenceItem
}

/** evidence_versions: each evidence_hash the outcome has had and the item hashes it covers. */
export interface EvidenceVersionRow {
  evidence_hash: string
  version: number
  item_hashes: string[]
  created_at: Date
}

/** Items after the outcome's others, each only once (an item it has already keeps its place). */
export function evidenceItemsInsert(outcomeId: string, items: readonly HashedEvidenceItem[]): Statement {
  // The items go as one JSON array of the canonical texts already hashed: a jsonb[] parameter would have the
  // driver escape every quote of every item again, megabytes of work on the event loop for large evidence.
  return statement(
    `INSERT INTO evidence_items (outcome_id, item_hash, position, item)
     SELECT $1, ($2::text[])[o], coalesce((SELECT max(position) FROM evidence_items WHERE outcome_id = $1), 0) + o, i
     FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS t(i, o)
     ON CONFLICT (outcome_id, item_hash) DO NOTHING`,
    [outcomeId, items.map((i) => i.item_hash), `[${items.map((i) => i.canonical).join(',')}]`],
  )
}

/** The outcome's next evidence version, unless it has had this one. */
export function evidenceVersionInsert(
  outcomeId: string,
  version: { evidence_hash: string; item_hashes: string[]; created_at: Date },
): Statement {
  return statement(
    `INSERT INTO evidence_versions (outcome_id, evidence_hash, version, item_hashes, created_at)
     VALUES ($1, $2, coalesce((SELECT max(version) FROM evidence_versions WHERE outcome_id = $1), 0) + 1, $3::text[], $4)
     ON CONFLICT (outcome_id, evidence_hash) DO NOTHING`,
    [outcomeId, version.evidence_hash, version.item_hashes, version.created_at],
  )
}

/**
 * New evidence of an outcome as one statement: its items that are new (none, or some) and its new version. Run in
 * the transaction that creates the outcome row or moves it to that version (outcomeEvidenceUpdate).
 */
export function evidenceWrites(
  outcomeId: string,
  items: readonly HashedEvidenceItem[],
  version: { evidence_hash: string; item_hashes: string[]; created_at: Date },
): Statement {
  const versionInsert = evidenceVersionInsert(outcomeId, version)
  return items.length === 0
    ? versionInsert
    : combineWrites([evidenceItemsInsert(outcomeId, items), versionInsert])
}

/** Every evidence version of the given outcomes, oldest first. */
export function evidenceVersionsOf(
  outcomeIds: string[],
): Statement<EvidenceVersionRow & { outcome_id: string }> {
  return statement(
    `SELECT outcome_id, evidence_hash, version, item_hashes, created_at FROM evidence_versions
     WHERE outcome_id = ANY($1::uuid[]) ORDER BY outcome_id, version`,
    [outcomeIds],
  )
}

/** Each evidence version of an outcome with its number of items (not the items: a version may list a thousand). */
export function evidenceVersionSizes(outcomeId: string): Statement<{ evidence_hash: string; items: number }> {
  return named(
    'SELECT evidence_hash, cardinality(item_hashes) AS items FROM evidence_versions WHERE outcome_id = $1',
    [outcomeId],
  )
}
