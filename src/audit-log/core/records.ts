import {
  canonicalJson,
  canonicalJsonValue,
  type JsonValue,
  type Sha256,
  sha256,
} from '../../domain/shared/canonical-json.ts'
import type { AuditKind } from '../../domain/vocabulary.ts'

export const GENESIS_HASH: Sha256 = `sha256:${'0'.repeat(64)}`

/**
 * What a change writes about itself, before the sequencer gives it a place in the log: the time of the change,
 * kind, actor (key id or "system"), the ids it concerns, the verdict if any, and what the change was. Every field
 * is present (absent ids are null): the form an entry waits in the intake in, made by the append path from the
 * caller's `AuditEntry` (src/audit-log/append.ts).
 */
export interface UnsequencedAuditRecord {
  at: string
  kind: AuditKind
  actor: string
  outcome_id: string | null
  manifest_id: string | null
  subagent_id: string | null
  orchestrator_id: string | null
  verdict: string | null
  data: { [key: string]: JsonValue }
}

/** One audit record, field for field as the API serves it; absent values are null. See docs/audit-log.md. */
export interface AuditRecord extends UnsequencedAuditRecord {
  seq: number
  prev_hash: string
  hash: string
}

export type UnhashedAuditRecord = Omit<AuditRecord, 'hash'>

/** The fields that are hashed, in the record's documented order: every field but `hash`. */
const HASHED_FIELDS = [
  'seq',
  'at',
  'kind',
  'actor',
  'outcome_id',
  'manifest_id',
  'subagent_id',
  'orchestrator_id',
  'verdict',
  'data',
  'prev_hash',
] as const satisfies readonly (keyof UnhashedAuditRecord)[]

/** `hash = sha256(prev_hash + JCS(record without hash))`, the two strings concatenated as UTF-8. */
export function hashAuditRecord(record: UnhashedAuditRecord): Sha256 {
  return sha256(record.prev_hash + canonicalAuditRecord(record))
}

const text = (value: string) => JSON.stringify(value)
const textOrNull = (value: string | null) => (value === null ? 'null' : JSON.stringify(value))

/**
 * JCS of the record without its hash, written out field by field in JCS key order, with the general serializer
 * only for `data`. Equal to `canonicalJson` of the picked fields (a property test holds it to that) and about
 * twice as fast, which is what `audit verify` spends its time on. JSON.stringify escapes strings exactly as
 * RFC 8785 does for well-formed strings; a lone surrogate (which JCS refuses) only makes the hash mismatch.
 */
export function canonicalAuditRecord(record: UnhashedAuditRecord): string {
  const [head, tail] = canonicalAuditParts(record)
  return head + tail
}

/**
 * JCS of the whole record, `hash` included: the input of the record's leaf in the Merkle tree. `hash` sorts
 * between `data` and `kind`, so it is spliced between the two halves of the record's canonical text.
 */
export function canonicalAuditRecordWithHash(record: AuditRecord): string {
  const [head, tail] = canonicalAuditParts(record)
  return `${head}"hash":${text(record.hash)},${tail}`
}

/** A record with its canonical text (JCS without `hash`): built once, hashed, and stored beside the record. */
export interface SealedAuditRecord extends AuditRecord {
  canonical: string
}

/** Gives a record its hash, building its canonical text once (what the sequencer and the bench fill do). */
export function sealAuditRecord(record: UnhashedAuditRecord): SealedAuditRecord {
  const canonical = canonicalAuditRecord(record)
  return { ...record, hash: sha256(record.prev_hash + canonical), canonical }
}

/**
 * A canonical text (without `hash`) split where `hash` goes: before `"kind":`, the first key after `data`. The
 * last such key is the record's own: a key's quotes are never inside a JSON string, where they are escaped, and
 * only `data` can hold one of its own. Null for a text without one.
 */
export function splitAtHash(canonical: string): [head: string, tail: string] | null {
  const split = canonical.lastIndexOf(',"kind":') + 1
  return split > 0 ? [canonical.slice(0, split), canonical.slice(split)] : null
}

/** JCS of the whole record from its canonical text and its hash (`canonicalAuditRecordWithHash`, no rebuild). */
export function canonicalTextWithHash(canonical: string, hash: string): string {
  const parts = splitAtHash(canonical)
  if (parts === null) throw new RangeError('not the canonical text of an audit record')
  return `${parts[0]}"hash":${text(hash)},${parts[1]}`
}

/** The canonical text of the record without its hash, split where `hash` would go (after `data`). */
export function canonicalAuditParts(record: UnhashedAuditRecord): [head: string, tail: string] {
  return [`${canonicalAuditPrefix(record)}${canonicalJsonValue(record.data)},`, canonicalAuditTail(record)]
}

/** The canonical text's fields before `data`'s value: `{"actor":…,"at":…,"data":`. */
function canonicalAuditPrefix(record: Pick<UnsequencedAuditRecord, 'actor' | 'at'>): string {
  return `{"actor":${text(record.actor)},"at":${text(record.at)},"data":`
}

/** The canonical text's fields after `data` (where the leaf's `hash` goes), from `"kind":` to the end. */
function canonicalAuditTail(record: Omit<UnhashedAuditRecord, 'data' | 'actor' | 'at'>): string {
  const seq = Number.isSafeInteger(record.seq) ? String(record.seq) : canonicalJson(record.seq)
  return (
    `"kind":${text(record.kind)},"manifest_id":${textOrNull(record.manifest_id)},` +
    `"orchestrator_id":${textOrNull(record.orchestrator_id)},"outcome_id":${textOrNull(record.outcome_id)},` +
    `"prev_hash":${text(record.prev_hash)},"seq":${seq},"subagent_id":${textOrNull(record.subagent_id)},` +
    `"verdict":${textOrNull(record.verdict)}}`
  )
}

/** The record's hashed fields as a plain object (what `canonicalAuditRecord` serializes). */
export function hashedAuditFields(record: UnhashedAuditRecord): Record<string, unknown> {
  return Object.fromEntries(HASHED_FIELDS.map((field) => [field, record[field]]))
}

export interface ChainCheck {
  /** The first record whose link or hash does not verify, or null. */
  firstBadSeq: number | null
  checked: number
  head: { seq: number; hash: string } | null
}

/**
 * Incremental chain verifier: feed records in ascending seq order. A record is bad when its seq is not the
 * successor of the previous one, its prev_hash is not the previous hash, or its own hash does not recompute.
 */
export class ChainVerifier {
  private expectedPrev: string | null
  private expectedSeq: number | null
  readonly result: ChainCheck = { firstBadSeq: null, checked: 0, head: null }

  /** `previous` is the record before the checked range (null when the range starts at the chain's origin). */
  constructor(previous: { seq: number; hash: string } | null, startsAtGenesis: boolean) {
    this.expectedPrev = previous ? previous.hash : startsAtGenesis ? GENESIS_HASH : null
    this.expectedSeq = previous ? previous.seq + 1 : startsAtGenesis ? 1 : null
  }

  /** Returns false once a bad record has been found (the caller may stop reading). */
  push(record: AuditRecord): boolean {
    if (this.result.firstBadSeq !== null) return false
    this.result.checked += 1
    const linked =
      (this.expectedPrev === null || record.prev_hash === this.expectedPrev) &&
      (this.expectedSeq === null || record.seq === this.expectedSeq)
    if (this.expectedSeq !== null && record.seq > this.expectedSeq) {
      // Records are missing: the chain breaks at the first missing seq.
      this.result.firstBadSeq = this.expectedSeq
      return false
    }
    if (!linked || hashAuditRecord(record) !== record.hash) {
      this.result.firstBadSeq = record.seq
      return false
    }
    this.result.head = { seq: record.seq, hash: record.hash }
    this.expectedPrev = record.hash
    this.expectedSeq = record.seq + 1
    return true
  }
}
