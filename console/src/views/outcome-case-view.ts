import {
  append,
  type Child,
  directiveBadge,
  facts,
  h,
  hashText,
  jsonBlock,
  scrollingTable,
  section,
  statusBadge,
  timeOf,
  verdictBadge,
} from '../dom.ts'
import type {
  CriteriaDifference,
  DivergencePair,
  Envelope,
  EvidenceItem,
  ManifestInterpretation,
  Outcome,
  OutcomeManifest,
  ProbeRun,
} from '../shapes.ts'
import { canonicalJson, sha256Digest } from '../vendor/transparency.js'
import type { View } from '../view.ts'
import { manifestSummary } from './manifest-summary.ts'
import { valueText } from './position-text.ts'
import { outcomeResolutionForm } from './resolution-forms.ts'
import { storyTimeline } from './story-timeline.ts'

const RECEIPT_KINDS: Record<string, string> = {
  criteria: 'They judged by different criteria.',
  evidence_seen: 'They used the same criteria but judged different evidence.',
  interpretation: 'They used the same criteria and evidence, and still read it differently.',
}

/**
 * One outcome as ops need it to decide: each disagreeing pair side by side, the points where their criteria
 * differ (by JSON Pointer), the evidence only one side saw, the resolution form while it is halted, and its story.
 */
export const outcomeCaseView: View = async (ctx, main, [outcomeId]) => {
  const outcome = await ctx.api.get<Outcome>(`/v1/outcomes/${outcomeId}`, ctx.signal)
  ctx.heading.textContent = `Outcome ${outcome.subagent_id} / ${outcome.run_id}`
  document.title = `${ctx.heading.textContent} · Arbiter ops console`
  const current = outcome.manifest_id
    ? await ctx.api.get<Envelope<OutcomeManifest>>(`/v1/manifests/${outcome.manifest_id}`, ctx.signal)
    : null
  // A resolution's manifest supersedes the HALT; the disagreement itself is described by the HALT.
  let disputed = current
  if (current && !current.manifest.interpretation_divergence_receipt && current.manifest.supersedes) {
    disputed = await ctx.api.get<Envelope<OutcomeManifest>>(
      `/v1/manifests/${current.manifest.supersedes}`,
      ctx.signal,
    )
  }
  const evidenceByHash = hashEvidence(outcome.evidence)
  const story = storyTimeline(ctx, `/v1/audit/outcomes/${outcome.outcome_id}`)

  append(main, [
    facts([
      ['Status', statusBadge(outcome.status)],
      ['Verdict', current ? verdictBadge(current.manifest.verdict) : 'not decided yet'],
      ['Directive', current ? directiveBadge(current.manifest.directive) : '—'],
      ['Expected', outcome.expected_orchestrators.join(', ') || 'whoever reports'],
      ['Designated arbiter', outcome.arbiter_orchestrator_id ?? 'none'],
      ['Fallback policy', outcome.fallback_policy],
      ['Created', timeOf(outcome.created_at, true)],
    ]),
    section('Disagreement', disagreement(disputed?.manifest ?? null, evidenceByHash, outcome)),
    section('Resolution', resolution(outcome, current, ctx, story)),
    section(
      'Story',
      h('p', { class: 'hint' }, 'Every audit record about this outcome, in log order.'),
      story,
    ),
  ])
}

function resolution(
  outcome: Outcome,
  current: Envelope<OutcomeManifest> | null,
  ctx: Parameters<View>[0],
  story: HTMLElement,
): Child {
  if (outcome.status === 'halted') {
    return outcomeResolutionForm(ctx, outcome, () => {
      // The resolution wrote new records: show the story as it is now.
      story.replaceWith(storyTimeline(ctx, `/v1/audit/outcomes/${outcome.outcome_id}`))
    })
  }
  if (outcome.status === 'resolved' && current) return manifestSummary(current, ctx)
  return [
    h('p', null, `Only a halted outcome can be resolved; this one is ${outcome.status}.`),
    current ? manifestSummary(current, ctx) : null,
  ]
}

/** Maps each evidence item's hash (sha256 of its canonical JSON, as the service names it) to the item. */
function hashEvidence(items: EvidenceItem[]): Map<string, EvidenceItem> {
  return new Map(items.map((item) => [sha256Digest(canonicalJson(item)), item]))
}

function disagreement(
  manifest: OutcomeManifest | null,
  evidence: Map<string, EvidenceItem>,
  outcome: Outcome,
): Child {
  const receipt = manifest?.interpretation_divergence_receipt
  const probe = manifest ? probeSummary(manifest.ground_truth_arbiter_predicate) : null
  if (!manifest || !receipt) {
    return [
      probe,
      h(
        'p',
        { class: 'empty' },
        'No divergence receipt: the orchestrators did not disagree (or no decision yet).',
      ),
    ]
  }
  const interpretations = new Map(manifest.interpretations.map((i) => [i.orchestrator_id, i]))
  const judged = (evidenceHash: string | undefined) => judgedEvidence(evidenceHash, outcome, evidence)
  return [
    h(
      'p',
      null,
      RECEIPT_KINDS[receipt.kind] ?? receipt.kind,
      receipt.actions_disjoint ? ' Their declared actions touch disjoint resources.' : '',
    ),
    probe,
    receipt.pairs.map((pair) => pairView(pair, interpretations, evidence, judged)),
  ]
}

/**
 * What the ground-truth probe did, in the summary where ops look first: a probe that failed (a secret missing,
 * a timeout) is why nothing settled the case.
 */
function probeSummary(run: ProbeRun | null | undefined): HTMLElement | null {
  if (!run) return null
  const request = run.request
    ? [' (', h('code', null, `${run.request.method} ${run.request.url}`), ')']
    : null
  if (run.error) {
    return h(
      'div',
      { class: 'probe-summary probe-failed', role: 'note' },
      h(
        'p',
        null,
        h('strong', null, 'The ground-truth probe failed: '),
        h('code', null, run.error.code),
        request,
      ),
      h('p', null, run.error.detail),
      h(
        'p',
        { class: 'hint' },
        run.http_status === null ? 'No response arrived' : `Last HTTP status ${run.http_status}`,
        run.attempts ? `, after ${run.attempts} attempt${run.attempts === 1 ? '' : 's'}.` : '.',
      ),
    )
  }
  return h(
    'div',
    { class: 'probe-summary', role: 'note' },
    h('p', null, h('strong', null, 'The ground-truth probe answered: '), run.result ?? 'no result', request),
  )
}

/** The items of the evidence version an orchestrator judged, when the outcome lists its versions. */
function judgedEvidence(
  evidenceHash: string | undefined,
  outcome: Outcome,
  evidence: Map<string, EvidenceItem>,
): { version: number; of: number; items: { hash: string; item: EvidenceItem | undefined }[] } | null {
  const versions = outcome.evidence_versions
  if (!evidenceHash || !versions) return null
  const index = versions.findIndex((v) => v.evidence_hash === evidenceHash)
  if (index < 0) return null
  const items = versions[index]!.item_hashes.map((hash) => ({ hash, item: evidence.get(hash) }))
  return { version: index + 1, of: versions.length, items }
}

type Judged = ReturnType<typeof judgedEvidence>

function pairView(
  pair: DivergencePair,
  interpretations: Map<string, ManifestInterpretation>,
  evidence: Map<string, EvidenceItem>,
  judged: (evidenceHash: string | undefined) => Judged,
): HTMLElement {
  const title = `${pair.a} and ${pair.b}`
  return h(
    'article',
    { class: 'pair', 'aria-label': title },
    h('h3', null, pair.a, h('span', { class: 'versus' }, ' vs '), pair.b),
    h(
      'div',
      { class: 'side-by-side' },
      side(
        pair.a,
        pair.a_interpretation,
        pair.a_criterion_signature,
        interpretations.get(pair.a),
        'a',
        judged,
      ),
      side(
        pair.b,
        pair.b_interpretation,
        pair.b_criterion_signature,
        interpretations.get(pair.b),
        'b',
        judged,
      ),
    ),
    h('h4', null, 'Criteria differences'),
    criteriaDifferences(pair),
    h('h4', null, 'Evidence only one side saw'),
    evidenceDifferences(pair, evidence),
  )
}

function side(
  orchestrator: string,
  reading: string,
  signature: string,
  interpretation: ManifestInterpretation | undefined,
  which: 'a' | 'b',
  judged: (evidenceHash: string | undefined) => Judged,
): HTMLElement {
  const action = interpretation?.intended_action
  const seen = judged(interpretation?.evidence_hash)
  return h(
    'div',
    { class: `side side-${which}` },
    h('h5', null, orchestrator),
    facts([
      ['Reading', h('span', { class: `badge reading reading-${reading}` }, reading)],
      ['Criteria', hashText(signature)],
      [
        'Evidence judged',
        seen
          ? [`version ${seen.version} of ${seen.of} `, hashText(interpretation?.evidence_hash)]
          : hashText(interpretation?.evidence_hash),
      ],
      [
        'Intended action',
        action
          ? [
              h('strong', null, action.kind),
              action.resources.length > 0 ? ` on ${action.resources.join(', ')}` : '',
            ]
          : 'not declared',
      ],
      ['Revision', interpretation ? String(interpretation.revision) : '—'],
      ['Received', timeOf(interpretation?.received_at, true)],
    ]),
    seen
      ? h(
          'ul',
          { class: 'evidence-list judged', 'aria-label': `Evidence ${orchestrator} judged` },
          seen.items.map(({ hash, item }) => evidenceLine(hash, item)),
        )
      : null,
  )
}

/** One evidence item on a line a person reads: its kind and name, then its content ("charged: 42.00 EUR"). */
function evidenceLine(hash: string, item: EvidenceItem | undefined): HTMLElement {
  if (!item) return h('li', null, hashText(hash), h('span', { class: 'hint' }, ' (content not matched)'))
  return h(
    'li',
    { title: hash },
    h('strong', null, item.kind),
    item.name ? ` “${item.name}”` : '',
    ': ',
    h('span', { class: 'evidence-content' }, contentText(item.content)),
  )
}

function contentText(content: EvidenceItem['content']): string {
  const text =
    content !== null && typeof content === 'object' && !Array.isArray(content)
      ? Object.entries(content)
          .map(([key, value]) => `${key}: ${valueText(value)}`)
          .join(' · ')
      : valueText(content)
  return text.length > 300 ? `${text.slice(0, 299)}…` : text
}

function criteriaDifferences(pair: DivergencePair): Child {
  if (pair.a_criterion_signature === pair.b_criterion_signature) {
    return h('p', { class: 'empty' }, 'Same criteria on both sides.')
  }
  const differences = pair.criteria_divergence
  if (!differences) {
    return h(
      'p',
      null,
      'The criteria differ, but at least one side sent only a hash of its criteria, so the points cannot be shown.',
    )
  }
  return scrollingTable(
    `Criteria differences between ${pair.a} and ${pair.b}`,
    h(
      'table',
      { class: 'diff' },
      h(
        'caption',
        null,
        `${differences.length} point${differences.length === 1 ? '' : 's'} where the criteria differ`,
      ),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          h('th', { scope: 'col' }, 'JSON Pointer'),
          h('th', { scope: 'col' }, pair.a),
          h('th', { scope: 'col' }, pair.b),
        ),
      ),
      h(
        'tbody',
        null,
        differences.map((difference) => differenceRow(difference, pair)),
      ),
    ),
  )
}

function differenceRow(difference: CriteriaDifference, pair: DivergencePair): HTMLElement {
  const inA = 'a' in difference
  const inB = 'b' in difference
  const kind = inA && inB ? 'changed' : inA ? 'only-a' : 'only-b'
  const cell = (present: boolean, value: unknown, owner: string) =>
    h(
      'td',
      null,
      present
        ? h('mark', null, h('code', null, valueText(value as never)))
        : h('span', { class: 'absent' }, `absent (only ${owner === pair.a ? pair.b : pair.a} has it)`),
    )
  return h(
    'tr',
    { class: `diff-${kind}` },
    h('th', { scope: 'row' }, h('code', null, difference.pointer)),
    cell(inA, difference.a, pair.a),
    cell(inB, difference.b, pair.b),
  )
}

function evidenceDifferences(pair: DivergencePair, evidence: Map<string, EvidenceItem>): Child {
  const divergence = pair.evidence_divergence
  if (!divergence) return h('p', { class: 'empty' }, 'Both judged the same evidence version.')
  const column = (owner: string, versionHash: string, hashes: string[]) =>
    h(
      'div',
      { class: 'side' },
      h('h5', null, `Only ${owner} saw (${hashes.length})`),
      h('p', { class: 'hint' }, 'Judged evidence version ', hashText(versionHash)),
      hashes.length === 0
        ? h('p', { class: 'empty' }, 'Nothing the other side did not see.')
        : h(
            'ul',
            { class: 'evidence-list' },
            hashes.map((hash) => evidenceItem(hash, evidence.get(hash))),
          ),
    )
  return h(
    'div',
    { class: 'side-by-side' },
    column(pair.a, divergence.a_evidence_hash, divergence.only_in_a),
    column(pair.b, divergence.b_evidence_hash, divergence.only_in_b),
  )
}

function evidenceItem(hash: string, item: EvidenceItem | undefined): HTMLElement {
  if (!item) return h('li', null, hashText(hash, 16), h('span', { class: 'hint' }, ' (content not matched)'))
  return h(
    'li',
    null,
    h('p', null, h('strong', null, item.kind), item.name ? ` “${item.name}”` : '', ' ', hashText(hash)),
    jsonBlock(item.content),
  )
}
