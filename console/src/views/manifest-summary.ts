import { isAbort } from '../api.ts'
import { type Child, directiveBadge, facts, h, hashText, jsonBlock, timeOf, verdictBadge } from '../dom.ts'
import { actorText, keyLabels } from '../key-labels.ts'
import { auditSeqOf, type Envelope, manifestKind, type OutcomeManifest } from '../shapes.ts'
import type { ViewContext } from '../view.ts'

/** Delays before reading a manifest again while its audit_seq is still null: the sequencer takes milliseconds. */
const SEQ_RETRY_MS = [100, 250, 500, 1000, 2000, 4000, 8000, 15000]

/**
 * The essentials of a signed manifest, with the whole envelope one click away. The answer that issued a manifest
 * may carry `audit_seq: null` (the log places it milliseconds later): the summary then reads the manifest again
 * until it is placed, and shows the seq.
 */
export function manifestSummary(
  envelope: Envelope,
  ctx: Pick<ViewContext, 'api' | 'signal'>,
  label = 'Signed manifest (JSON)',
): HTMLElement {
  const m = envelope.manifest
  const seq = auditSeqOf(envelope)
  const rows: [string, Child][] = [
    ['Verdict', verdictBadge(m.verdict)],
    ['Directive', directiveBadge(m.directive)],
  ]
  if (manifestKind(m) === 'outcome') {
    const outcome = m as OutcomeManifest
    rows.push(['Resolved outcome', outcome.resolved_outcome ?? '—'])
    rows.push(['Action owner', outcome.action_owner ?? '—'])
  }
  const resolution = (m as { resolution?: { by: string; rationale: string } | null }).resolution
  if (resolution) {
    const by = h('span', { class: 'resolved-by' }, h('code', null, resolution.by))
    void keyLabels(ctx.api, [resolution.by]).then((labels) =>
      by.replaceChildren(actorText(resolution.by, labels)),
    )
    rows.push(['Resolved by', by])
    rows.push(['Rationale', resolution.rationale])
  }
  const seqText = h(
    'span',
    { class: 'audit-seq' },
    seq === null ? 'not yet sequenced (placed in the log within moments)' : String(seq),
  )
  rows.push(
    ['Issued', timeOf(m.issued_at, true)],
    ['Manifest', h('code', null, m.manifest_id)],
    ['Supersedes', m.supersedes ? h('code', null, m.supersedes) : '—'],
    ['Digest', hashText(envelope.manifest_digest, 16)],
    ['Audit seq', seqText],
  )
  const raw = rawJson(label, envelope)
  if (seq === null) {
    void waitForSeq(m.manifest_id, ctx).then((placed) => {
      if (!placed) {
        seqText.textContent = 'not yet sequenced: reload to check again'
        return
      }
      seqText.textContent = String(auditSeqOf(placed))
      raw.replaceWith(rawJson(label, placed))
    })
  }
  return h('div', { class: 'manifest-summary' }, facts(rows), raw)
}

/** Reads the manifest again, backing off, until its envelope carries an audit_seq; null if it never does. */
async function waitForSeq(
  manifestId: string,
  ctx: Pick<ViewContext, 'api' | 'signal'>,
): Promise<Envelope | null> {
  for (const delay of SEQ_RETRY_MS) {
    await new Promise((resolve) => setTimeout(resolve, delay))
    if (ctx.signal.aborted) return null
    try {
      const envelope = await ctx.api.get<Envelope>(`/v1/manifests/${manifestId}`, ctx.signal)
      if (auditSeqOf(envelope) !== null) return envelope
    } catch (err) {
      if (isAbort(err) || ctx.signal.aborted) return null
    }
  }
  return null
}

export function rawJson(label: string, value: unknown): HTMLElement {
  return h('details', { class: 'raw' }, h('summary', null, label), jsonBlock(value))
}
