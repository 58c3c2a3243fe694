import {
  append,
  directiveBadge,
  facts,
  h,
  hashText,
  scrollingTable,
  section,
  statusBadge,
  timeOf,
  verdictBadge,
} from '../dom.ts'
import type { Envelope, Finding, JudgeVerdict, Review, ReviewManifest } from '../shapes.ts'
import type { View } from '../view.ts'
import { manifestSummary } from './manifest-summary.ts'
import { storyTimeline } from './story-timeline.ts'

/** One review: each judge's verdict side by side, the findings union of a council, and its story. */
export const reviewCaseView: View = async (ctx, main, [reviewId]) => {
  const review = await ctx.api.get<Review>(`/v1/reviews/${reviewId}`, ctx.signal)
  ctx.heading.textContent = `Review ${review.review_key}`
  document.title = `${ctx.heading.textContent} · Arbiter ops console`
  const current = review.manifest_id
    ? await ctx.api.get<Envelope<ReviewManifest>>(`/v1/manifests/${review.manifest_id}`, ctx.signal)
    : null
  const manifest = current?.manifest ?? null
  append(main, [
    facts([
      ['Status', statusBadge(review.status)],
      ['Mode', review.mode.replace(/_/g, ' ')],
      ['Revision', String(review.revision)],
      ['Verdict', manifest ? verdictBadge(manifest.verdict) : 'not decided yet'],
      ['Directive', manifest ? directiveBadge(manifest.directive) : '—'],
      [
        'Subject',
        manifest ? [manifest.subject.description ?? '', ' ', hashText(manifest.subject.digest)] : '—',
      ],
      [
        'Implementer',
        manifest ? `${manifest.implementer.model} (context ${manifest.implementer.context_id})` : '—',
      ],
      ['Created', timeOf(review.created_at, true)],
    ]),
    manifest?.blocking_question
      ? h('p', { class: 'callout' }, 'Blocking question: ', h('q', null, manifest.blocking_question))
      : null,
    manifest?.blocking_reason
      ? h('p', { class: 'callout' }, 'Blocking reason: ', manifest.blocking_reason)
      : null,
    section(
      "Judges' verdicts",
      !manifest || manifest.verdicts.length === 0
        ? h('p', { class: 'empty' }, 'No verdict decided yet.')
        : [
            manifest.divergence
              ? h(
                  'p',
                  { class: 'callout' },
                  `The judges differ: ${manifest.divergence.a} says ${manifest.divergence.a_status}, ${manifest.divergence.b} says ${manifest.divergence.b_status}; the stricter verdict wins.`,
                )
              : null,
            h('div', { class: 'positions' }, manifest.verdicts.map(verdictCard)),
          ],
    ),
    section(
      'Findings union',
      manifest ? findingsView(manifest) : h('p', { class: 'empty' }, 'Not decided yet.'),
    ),
    current ? section('Manifest', manifestSummary(current, ctx)) : null,
    section(
      'Story',
      h('p', { class: 'hint' }, 'Every audit record about this review, in log order.'),
      storyTimeline(ctx, `/v1/audit/reviews/${review.review_id}`),
    ),
  ])
}

function verdictCard(verdict: JudgeVerdict): HTMLElement {
  const place =
    verdict.stage !== null ? `stage ${verdict.stage}` : verdict.role ? `role ${verdict.role}` : null
  return h(
    'div',
    { class: 'side verdict-card' },
    h('h3', null, verdict.judge_id, ' ', statusBadge(verdict.status)),
    h('p', { class: 'hint' }, verdict.model, place ? ` · ${place}` : ''),
    verdict.summary ? h('p', null, verdict.summary) : null,
    verdict.concerns.length > 0
      ? [
          h('h4', null, 'Concerns'),
          h(
            'ul',
            null,
            verdict.concerns.map((concern) => h('li', null, concern)),
          ),
        ]
      : null,
    verdict.blocking_question ? h('p', null, 'Asks: ', h('q', null, verdict.blocking_question)) : null,
    verdict.blocking_reason ? h('p', null, 'Blocked: ', verdict.blocking_reason) : null,
  )
}

function findingsView(manifest: ReviewManifest): HTMLElement {
  if (manifest.findings.length === 0) {
    return h(
      'p',
      { class: 'empty' },
      manifest.mode === 'council'
        ? 'The council reported no findings.'
        : 'Findings are collected in council mode only.',
    )
  }
  return scrollingTable(
    'Findings union',
    h(
      'table',
      null,
      h('caption', null, 'Findings merged by fingerprint, most severe and most confirmed first'),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['Severity', 'Finding', 'Location', 'Reported by', 'Confidence'].map((label) =>
            h('th', { scope: 'col' }, label),
          ),
        ),
      ),
      h('tbody', null, manifest.findings.map(findingRow)),
    ),
  )
}

function findingRow(finding: Finding): HTMLElement {
  return h(
    'tr',
    null,
    h('td', null, h('span', { class: `badge severity severity-${finding.severity}` }, finding.severity)),
    h('th', { scope: 'row' }, finding.title),
    h('td', null, finding.location ? h('code', null, finding.location) : '—'),
    h('td', null, `${finding.reported_by.join(', ')} (${finding.models.join(', ')})`),
    h('td', null, `${Math.round(finding.confidence * 100)} %`),
  )
}
