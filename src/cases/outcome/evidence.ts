import { appendAuditRecords } from '../../audit-log/append.ts'
import { withTransaction } from '../../db/pool.ts'
import { queryRows, runStatement } from '../../db/statement.ts'
import { breach, LIMITS } from '../../domain/limits.ts'
import {
  type EvidenceItem,
  evidenceHash,
  firstOccurrences,
  hashEvidence,
} from '../../domain/outcome/evidence.ts'
import { acceptsInputs } from '../../domain/outcome/transitions.ts'
import { sortedUnique } from '../../domain/shared/order.ts'
import { AppError, limitExceeded } from '../../errors.ts'
import type { Actor, ServiceContext } from '../../services/context.ts'
import { evidenceVersionsOf, evidenceWrites } from './evidence-repository.ts'
import { outcomeEvidenceUpdate } from './repository.ts'
import { loadOutcomeView, lockOutcome } from './views.ts'

/** The outcome's evidence items, counted in every version that lists them, are bounded. */
export function assertEvidenceWithinLimit(items: number, path: string): void {
  if (items > LIMITS.evidence_items_per_outcome) {
    throw limitExceeded(
      breach('evidence_items_per_outcome', items, path),
      'the outcome’s evidence items, counted in every version that lists them, would be too many',
    )
  }
}

/** Adds items; the new evidence_hash covers the union of all items so far (earlier hashes stay valid). */
export async function appendEvidence(
  ctx: Pick<ServiceContext, 'db'>,
  outcomeId: string,
  items: EvidenceItem[],
  actor: Actor,
) {
  const hashed = hashEvidence(items)
  return withTransaction(ctx.db, async (tx) => {
    const outcome = await lockOutcome(tx, outcomeId)
    if (!acceptsInputs(outcome.status)) {
      throw new AppError(
        'CONFLICT',
        `outcome ${outcomeId} is already decided; evidence can no longer change`,
        { manifest_id: outcome.manifest_id },
      )
    }
    const versions = await queryRows(tx, evidenceVersionsOf([outcomeId]))
    const current = versions.find((v) => v.evidence_hash === outcome.evidence_hash)
    const itemHashes = sortedUnique([...(current?.item_hashes ?? []), ...hashed.map((h) => h.item_hash)])
    const newEvidenceHash = evidenceHash(itemHashes)
    if (newEvidenceHash === outcome.evidence_hash) {
      return { created: false, outcome: await loadOutcomeView(tx, outcomeId) }
    }
    // Each version lists every item it holds, and the outcome's view lists every version: the items are counted
    // over all versions together, so many small appends cannot make the view (and each append's read) grow
    // with the square of the items.
    const listedBefore = versions.reduce((listed, version) => listed + version.item_hashes.length, 0)
    assertEvidenceWithinLimit(listedBefore + itemHashes.length, 'body/evidence')
    const now = new Date()
    const known = new Set(current?.item_hashes ?? [])
    const added = firstOccurrences(hashed.filter((h) => !known.has(h.item_hash)))
    await runStatement(
      tx,
      evidenceWrites(outcomeId, added, {
        evidence_hash: newEvidenceHash,
        item_hashes: itemHashes,
        created_at: now,
      }),
    )
    await runStatement(tx, outcomeEvidenceUpdate(outcomeId, newEvidenceHash, itemHashes.length))
    const view = await loadOutcomeView(tx, outcomeId)
    await appendAuditRecords(tx, [
      {
        kind: 'evidence.appended',
        actor,
        at: now.toISOString(),
        outcome_id: outcomeId,
        subagent_id: outcome.subagent_id,
        data: {
          evidence_hash: newEvidenceHash,
          previous_evidence_hash: outcome.evidence_hash,
          added_item_hashes: sortedUnique(added.map((a) => a.item_hash)),
        },
      },
    ])
    return { created: true, outcome: view }
  })
}
