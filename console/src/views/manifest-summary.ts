import { type Child, directiveBadge, facts, h, hashText, jsonBlock, timeOf, verdictBadge } from '../dom.ts'
import { auditSeqOf, type Envelope, manifestKind, type OutcomeManifest } from '../shapes.ts'

/** The essentials of a signed manifest, with the whole envelope one click away. */
export function manifestSummary(envelope: Envelope, label = 'Signed manifest (JSON)'): HTMLElement {
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
    rows.push(['Resolved by', h('code', null, resolution.by)])
    rows.push(['Rationale', resolution.rationale])
  }
  rows.push(
    ['Issued', timeOf(m.issued_at, true)],
    ['Manifest', h('code', null, m.manifest_id)],
    ['Supersedes', m.supersedes ? h('code', null, m.supersedes) : '—'],
    ['Digest', hashText(envelope.manifest_digest, 16)],
    ['Audit seq', seq === null ? 'not yet sequenced' : String(seq)],
  )
  return h('div', { class: 'manifest-summary' }, facts(rows), rawJson(label, envelope))
}

export function rawJson(label: string, value: unknown): HTMLElement {
  return h('details', { class: 'raw' }, h('summary', null, label), jsonBlock(value))
}
