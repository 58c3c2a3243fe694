import { problemAlert } from '../api.ts'
import { serves } from '../capabilities.ts'
import { append, facts, h, jsonBlock, section, timeOf } from '../dom.ts'
import type { AuditRecord, CheckpointAnswer, InclusionProof } from '../shapes.ts'
import {
  bytesEqual,
  canonicalJson,
  decodeBase64,
  type JsonWebKeySet,
  leafHash,
  noteVerifier,
  openCheckpointAsync,
  verifyInclusion,
} from '../vendor/transparency.js'
import type { View, ViewContext } from '../view.ts'
import { knownRecords } from './story-timeline.ts'

interface Check {
  /** null: could not be checked here. */
  ok: boolean | null
  text: string
}

/** The proof that the log holds the record at a seq (`GET /v1/audit/proofs/inclusion?seq=`). */
export const recordProofView: View = (ctx, main, [seqText]) => {
  const seq = Number(seqText)
  ctx.heading.textContent = `Inclusion proof of seq ${seq}`
  return showProof(ctx, main, '/v1/audit/proofs/inclusion', `/v1/audit/proofs/inclusion?seq=${seq}`, seq)
}

/** The proof that a manifest was logged (`GET /v1/manifests/{id}/inclusion`, which carries its record). */
export const manifestProofView: View = (ctx, main, [manifestId]) => {
  ctx.heading.textContent = 'Inclusion proof of a manifest'
  return showProof(ctx, main, '/v1/manifests/{id}/inclusion', `/v1/manifests/${manifestId}/inclusion`, null)
}

/**
 * Shows an inclusion proof and recomputes it here in the browser (RFC 9162) rather than taking it on trust: the
 * record's leaf hash, then the Merkle path from that leaf to the root of the signed checkpoint.
 */
async function showProof(
  ctx: ViewContext,
  main: HTMLElement,
  route: string,
  path: string,
  seq: number | null,
): Promise<void> {
  const knownRecord = seq === null ? undefined : knownRecords.get(seq)
  if (!(await serves(route))) {
    append(main, [
      h(
        'p',
        { class: 'callout' },
        'This Arbiter does not serve inclusion proofs yet. Its hash chain can still be checked on the ',
        h('a', { href: '#/log' }, 'Audit log'),
        ' screen.',
      ),
      knownRecord ? section('The record', jsonBlock(knownRecord)) : null,
    ])
    return
  }
  let proof: InclusionProof
  try {
    proof = await ctx.api.get<InclusionProof>(path, ctx.signal)
  } catch (err) {
    if (!ctx.signal.aborted) main.append(problemAlert(err, 'read inclusion proofs'))
    return
  }
  const record = proof.record ?? knownRecord
  if (record) ctx.heading.textContent = `Inclusion proof of seq ${record.seq}`
  const checkpoint = proof.checkpoint?.checkpoint ?? null
  const checks = verify(proof, record)
  const signed = await signatureCheck(ctx, proof.checkpoint)
  if (signed) checks.push(signed)
  append(main, [
    h(
      'ul',
      { class: 'checks', 'aria-label': 'Checks' },
      checks.map((check) =>
        h(
          'li',
          { class: check.ok === null ? 'check unknown' : check.ok ? 'check ok' : 'check bad' },
          h(
            'span',
            { class: 'check-mark', 'aria-hidden': 'true' },
            check.ok === null ? '?' : check.ok ? '✓' : '✗',
          ),
          ' ',
          check.text,
        ),
      ),
    ),
    facts([
      ['Record', record ? `seq ${record.seq} (${record.kind})` : `seq ${seq ?? '—'}`],
      ['Leaf index', String(proof.leaf_index)],
      ['Tree size', String(proof.tree_size)],
      ['Leaf hash', h('code', { class: 'hash' }, proof.leaf_hash)],
      ['Checkpoint origin', checkpoint?.origin ?? '—'],
      ['Checkpoint root', checkpoint?.root_hash ? h('code', { class: 'hash' }, checkpoint.root_hash) : '—'],
      ['Checkpoint signed', timeOf(checkpoint?.at, true)],
    ]),
    section(
      `Proof path (${proof.proof.length} hashes)`,
      h(
        'ol',
        { class: 'proof-path' },
        proof.proof.map((hash) => h('li', null, h('code', { class: 'hash' }, hash))),
      ),
    ),
    proof.checkpoint?.note
      ? section('Signed checkpoint note', h('pre', { class: 'json' }, proof.checkpoint.note))
      : null,
    record ? section('The record', jsonBlock(record)) : null,
  ])
}

/** The checks, with the service's own RFC 9162 and RFC 8785 code (@arbiter/transparency's browser build). */
function verify(proof: InclusionProof, record: AuditRecord | undefined): Check[] {
  const checks: Check[] = []
  const leaf = decodeBase64(proof.leaf_hash)
  if (!record) {
    checks.push({
      ok: null,
      text: 'Open this proof from a case’s story to also check the record against its leaf.',
    })
  } else if (leaf && bytesEqual(leafHash(new TextEncoder().encode(canonicalJson(record))), leaf)) {
    checks.push({ ok: true, text: 'The record hashes to this leaf.' })
  } else {
    checks.push({ ok: false, text: 'The record does NOT hash to this leaf.' })
  }
  const expected = proof.checkpoint?.checkpoint.root_hash
  if (!expected) {
    checks.push({ ok: null, text: 'No signed checkpoint at this tree size to compare the root with.' })
    return checks
  }
  const path = proof.proof.map(decodeBase64)
  const root = decodeBase64(expected)
  const leads =
    leaf !== undefined &&
    root !== undefined &&
    path.every((hash) => hash !== undefined) &&
    verifyInclusion(proof.leaf_index, proof.tree_size, leaf, path as Uint8Array[], root)
  checks.push(
    leads
      ? { ok: true, text: 'The path leads from the leaf to the signed checkpoint’s root.' }
      : { ok: false, text: 'The path does NOT lead to the signed checkpoint’s root.' },
  )
  return checks
}

/**
 * Checks the checkpoint note's Ed25519 signature against the service's published keys (the note's key name is its
 * origin), and that the note names the tree and root the checkpoint's JSON does, which the path was checked
 * against. WebCrypto verifies the signature: only in a secure context (HTTPS, or localhost).
 */
async function signatureCheck(ctx: ViewContext, answer: CheckpointAnswer | null): Promise<Check | null> {
  const note = answer?.note
  if (!answer || !note) return null
  if (!globalThis.isSecureContext) {
    return {
      ok: null,
      text: 'This page is not in a secure context (HTTPS or localhost), so it cannot check the checkpoint’s signature.',
    }
  }
  let jwks: JsonWebKeySet
  try {
    jwks = await ctx.api.get<JsonWebKeySet>('/.well-known/jwks.json', ctx.signal)
  } catch {
    return {
      ok: null,
      text: 'The service’s public keys could not be read to check the checkpoint’s signature.',
    }
  }
  const origin = note.slice(0, note.indexOf('\n'))
  for (const key of jwks.keys) {
    let opened: Awaited<ReturnType<typeof openCheckpointAsync>>
    try {
      opened = await openCheckpointAsync(note, noteVerifier(origin, key))
    } catch {
      continue // another key (rotation), or not an Ed25519 key
    }
    const { treeSize, rootHash } = opened.checkpoint
    const root = decodeBase64(answer.checkpoint.root_hash ?? '')
    return treeSize === answer.checkpoint.tree_size && root !== undefined && bytesEqual(rootHash, root)
      ? { ok: true, text: 'The checkpoint is signed by this Arbiter’s log key.' }
      : { ok: false, text: 'The signed checkpoint note names a different tree than the checkpoint.' }
  }
  return { ok: false, text: 'The checkpoint note is NOT signed by any of this Arbiter’s keys.' }
}
