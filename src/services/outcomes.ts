import { randomUUID } from 'node:crypto'
import type { Queryable } from '../db/pool.ts'
import { withTransaction } from '../db/pool.ts'
import { type InterpretationRow, latestInterpretations } from '../db/repositories/interpretations.ts'
import {
  type EvidenceVersionRow,
  findOutcome,
  insertEvidenceItems,
  insertEvidenceVersion,
  insertOutcomeIfAbsent,
  listEvidenceItemsFor,
  listEvidenceVersions,
  listOutcomes as listOutcomeRows,
  type OutcomeRow,
  type OutcomeStatus,
  updateOutcomeEvidenceHash,
} from '../db/repositories/outcomes.ts'
import { findProbe } from '../db/repositories/probes.ts'
import { hashEvidenceItems, hashJson, type JsonValue, sortedUnique } from '../domain/canonical-json.ts'
import { AppError } from '../errors.ts'
import type { CreateOutcomeBody } from '../http/schemas/arbitration.ts'
import { appendAuditRecord } from './audit-log.ts'
import type { Actor, ServiceContext } from './context.ts'
import { toInterpretationView } from './interpretation-view.ts'

export type EvidenceItem = CreateOutcomeBody['evidence'][number]

/** SPEC §3: `item_hash = sha256(JCS(item))`, the item exactly as submitted. */
export function hashEvidence(items: EvidenceItem[]): { item_hash: string; item: JsonValue }[] {
  return items.map((item) => ({ item_hash: hashJson(item), item: item as JsonValue }))
}

export async function createOutcome(ctx: ServiceContext, body: CreateOutcomeBody, actor: Actor) {
  const hashed = hashEvidence(body.evidence)
  const itemHashes = sortedUnique(hashed.map((h) => h.item_hash))
  const evidenceHash = hashEvidenceItems(itemHashes)
  // "The same body again" is judged with defaults filled in: spelling out the default policy is the same body.
  const requestDigest = hashJson({ ...body, fallback_policy: body.fallback_policy ?? 'escalate' })
  const now = new Date()
  return withTransaction(ctx.db, async (tx) => {
    if (body.probe && !(await findProbe(tx, body.probe.probe_id))) {
      throw new AppError('UNPROCESSABLE', `probe ${body.probe.probe_id} is not registered`, {}, [
        { path: 'body/probe/probe_id', message: 'unknown probe' },
      ])
    }
    const { row, inserted } = await insertOutcomeIfAbsent(tx, {
      id: randomUUID(),
      subagent_id: body.subagent_id,
      run_id: body.run_id,
      request_digest: requestDigest,
      expected_orchestrators: sortedUnique(body.expected_orchestrators ?? []),
      deadline: body.deadline ? new Date(body.deadline) : null,
      arbiter_orchestrator_id: body.arbiter_orchestrator_id ?? null,
      probe_id: body.probe?.probe_id ?? null,
      probe_params: body.probe ? ((body.probe.params ?? {}) as Record<string, JsonValue>) : null,
      fallback_policy: body.fallback_policy ?? 'escalate',
      evidence_hash: evidenceHash,
      created_at: now,
    })
    if (!inserted) {
      if (row.request_digest !== requestDigest) {
        throw new AppError(
          'CONFLICT',
          `outcome (${body.subagent_id}, ${body.run_id}) already exists with a different body`,
          { outcome_id: row.id },
        )
      }
      return { created: false, outcome: await loadOutcomeView(tx, row) }
    }
    // Items in submission order, duplicates collapsed to their first occurrence.
    const firstOccurrences = [...new Map(hashed.map((h) => [h.item_hash, h])).values()]
    await insertEvidenceItems(tx, row.id, firstOccurrences)
    await insertEvidenceVersion(tx, row.id, {
      evidence_hash: evidenceHash,
      item_hashes: itemHashes,
      created_at: now,
    })
    // A new outcome's view is known without reading it back: its one evidence version, its items, nothing else.
    const view = toOutcomeView(
      row,
      [
        {
          outcome_id: row.id,
          evidence_hash: evidenceHash,
          version: 1,
          item_hashes: itemHashes,
          created_at: now,
        },
      ],
      firstOccurrences.map((h) => ({ outcome_id: row.id, item: h.item })),
      [],
    )
    // The audit append locks the global chain head until commit, so it goes last.
    await appendAuditRecord(tx, {
      kind: 'outcome.created',
      actor,
      at: now.toISOString(),
      outcome_id: row.id,
      subagent_id: row.subagent_id,
      data: {
        run_id: row.run_id,
        evidence_hash: evidenceHash,
        item_hashes: itemHashes,
        expected_orchestrators: row.expected_orchestrators,
        deadline: row.deadline ? row.deadline.toISOString() : null,
        arbiter_orchestrator_id: row.arbiter_orchestrator_id,
        probe_id: row.probe_id,
        fallback_policy: row.fallback_policy,
        request_digest: requestDigest,
      },
    })
    return { created: true, outcome: view }
  })
}

export function isFinalStatus(status: OutcomeStatus): boolean {
  return status !== 'open'
}

/** Adds items; the new evidence_hash covers the union of all items so far (earlier hashes stay valid). */
export async function appendEvidence(
  ctx: ServiceContext,
  outcomeId: string,
  items: EvidenceItem[],
  actor: Actor,
) {
  const hashed = hashEvidence(items)
  return withTransaction(ctx.db, async (tx) => {
    const outcome = await findOutcome(tx, outcomeId, { lock: true })
    if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
    if (isFinalStatus(outcome.status)) {
      throw new AppError(
        'CONFLICT',
        `outcome ${outcomeId} is already decided; evidence can no longer change`,
        {
          manifest_id: outcome.manifest_id,
        },
      )
    }
    const [current] = (await listEvidenceVersions(tx, [outcomeId])).filter(
      (v) => v.evidence_hash === outcome.evidence_hash,
    )
    const itemHashes = sortedUnique([...(current?.item_hashes ?? []), ...hashed.map((h) => h.item_hash)])
    const evidenceHash = hashEvidenceItems(itemHashes)
    if (evidenceHash === outcome.evidence_hash)
      return { created: false, outcome: await loadOutcomeView(tx, outcome) }
    const now = new Date()
    const known = new Set(current?.item_hashes ?? [])
    const added = [
      ...new Map(hashed.filter((h) => !known.has(h.item_hash)).map((h) => [h.item_hash, h])).values(),
    ]
    await insertEvidenceItems(tx, outcomeId, added)
    await insertEvidenceVersion(tx, outcomeId, {
      evidence_hash: evidenceHash,
      item_hashes: itemHashes,
      created_at: now,
    })
    await updateOutcomeEvidenceHash(tx, outcomeId, evidenceHash)
    const view = await loadOutcomeView(tx, { ...outcome, evidence_hash: evidenceHash })
    await appendAuditRecord(tx, {
      kind: 'evidence.appended',
      actor,
      at: now.toISOString(),
      outcome_id: outcomeId,
      subagent_id: outcome.subagent_id,
      data: {
        evidence_hash: evidenceHash,
        previous_evidence_hash: outcome.evidence_hash,
        added_item_hashes: sortedUnique(added.map((a) => a.item_hash)),
      },
    })
    return { created: true, outcome: view }
  })
}

export async function getOutcome(ctx: ServiceContext, outcomeId: string) {
  const outcome = await findOutcome(ctx.db, outcomeId)
  if (!outcome) throw new AppError('NOT_FOUND', `no outcome ${outcomeId}`)
  return loadOutcomeView(ctx.db, outcome)
}

export async function listOutcomes(
  ctx: ServiceContext,
  filter: { subagentId?: string | undefined; status?: OutcomeStatus | undefined; afterSeq: number | null },
  limit: number,
) {
  const rows = await listOutcomeRows(ctx.db, filter, limit)
  return { rows, views: await loadOutcomeViews(ctx.db, rows) }
}

async function loadOutcomeView(db: Queryable, row: OutcomeRow) {
  const [view] = await loadOutcomeViews(db, [row])
  return view!
}

/** GET /v1/outcomes shape for several outcomes, with three queries whatever their number. */
export async function loadOutcomeViews(db: Queryable, rows: OutcomeRow[]) {
  if (rows.length === 0) return []
  const ids = rows.map((row) => row.id)
  // One after another: `db` may be a single transaction client, which runs one query at a time.
  const versions = await listEvidenceVersions(db, ids)
  const items = await listEvidenceItemsFor(db, ids)
  const interpretations = await latestInterpretations(db, ids)
  return rows.map((row) => toOutcomeView(row, versions, items, interpretations))
}

function toOutcomeView(
  row: OutcomeRow,
  versions: (EvidenceVersionRow & { outcome_id: string })[],
  items: { outcome_id: string; item: JsonValue }[],
  interpretations: InterpretationRow[],
) {
  return {
    outcome_id: row.id,
    subagent_id: row.subagent_id,
    run_id: row.run_id,
    status: row.status,
    evidence_hash: row.evidence_hash,
    evidence_versions: versions
      .filter((v) => v.outcome_id === row.id)
      .map((v) => ({
        evidence_hash: v.evidence_hash,
        item_hashes: v.item_hashes,
        created_at: v.created_at.toISOString(),
      })),
    evidence: items.filter((i) => i.outcome_id === row.id).map((i) => i.item as EvidenceItem),
    interpretations: interpretations
      .filter((i) => i.outcome_id === row.id)
      .map(toInterpretationView)
      .sort((a, b) =>
        a.orchestrator_id < b.orchestrator_id ? -1 : a.orchestrator_id > b.orchestrator_id ? 1 : 0,
      ),
    expected_orchestrators: row.expected_orchestrators,
    deadline: row.deadline ? row.deadline.toISOString() : null,
    arbiter_orchestrator_id: row.arbiter_orchestrator_id,
    probe: row.probe_id ? { probe_id: row.probe_id, params: row.probe_params ?? {} } : null,
    fallback_policy: row.fallback_policy,
    manifest_id: row.manifest_id,
    reevaluation_rounds: row.reevaluation_rounds,
    created_at: row.created_at.toISOString(),
  }
}
