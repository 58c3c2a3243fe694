import {
  canonicalJson,
  hashJson,
  type JsonValue,
  rememberCanonicalJson,
  type Sha256,
  sha256,
} from '../shared/canonical-json.ts'
import { sortedUnique } from '../shared/order.ts'
import type { EvidenceKind } from './vocabulary.ts'

/** One piece of evidence about a sub-agent's result, exactly as submitted. */
export interface EvidenceItem {
  kind: EvidenceKind
  name?: string | undefined
  content: JsonValue
}

export interface HashedEvidenceItem {
  item_hash: Sha256
  item: EvidenceItem
  /** The item's canonical JSON (RFC 8785): what `item_hash` hashes, and what is stored. */
  canonical: string
}

/**
 * `item_hash = sha256(JCS(item))`, the item exactly as submitted (no defaults added), so a client can compute it
 * from what it sent. Each item's canonical text is remembered: the request digest, which covers the items again,
 * reuses it instead of canonicalizing a large item twice.
 */
export function hashEvidence(items: readonly EvidenceItem[]): HashedEvidenceItem[] {
  return items.map((item) => {
    const canonical = canonicalJson(item)
    rememberCanonicalJson(item, canonical)
    return { item_hash: sha256(canonical), item, canonical }
  })
}

/** `evidence_hash`: the hash of the sorted, de-duplicated list of item hashes (one evidence version). */
export function evidenceHash(itemHashes: readonly string[]): Sha256 {
  return hashJson(sortedUnique(itemHashes))
}

/** Items in submission order with later duplicates dropped: what a new evidence version adds to storage. */
export function firstOccurrences(items: readonly HashedEvidenceItem[]): HashedEvidenceItem[] {
  return [...new Map(items.map((hashed) => [hashed.item_hash, hashed])).values()]
}
