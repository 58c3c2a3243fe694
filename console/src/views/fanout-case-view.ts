import {
  append,
  type Child,
  directiveBadge,
  facts,
  h,
  jsonBlock,
  scrollingTable,
  section,
  statusBadge,
  timeOf,
  verdictBadge,
} from '../dom.ts'
import type {
  Coverage,
  Envelope,
  FactClaim,
  FactPosition,
  Fanout,
  ReconciledFact,
  ReconciliationManifest,
} from '../shapes.ts'
import type { View } from '../view.ts'
import { manifestSummary, rawJson } from './manifest-summary.ts'
import { positionText, valueText } from './position-text.ts'
import { fanoutResolutionForm } from './resolution-forms.ts'
import { storyTimeline } from './story-timeline.ts'

/**
 * One fan-out: each contested fact's positions side by side with the claims behind them, their sources, the
 * conflicts between them (carve-outs marked) and echoes (agreement that is one shared source); the coverage of
 * its subtasks; the resolution form while it is halted; and its story.
 */
export const fanoutCaseView: View = async (ctx, main, [fanoutId]) => {
  const fanout = await ctx.api.get<Fanout>(`/v1/fanouts/${fanoutId}`, ctx.signal)
  ctx.heading.textContent = `Fan-out ${fanout.fanout_key}`
  document.title = `${ctx.heading.textContent} · Arbiter ops console`
  const current = fanout.manifest_id
    ? await ctx.api.get<Envelope<ReconciliationManifest>>(`/v1/manifests/${fanout.manifest_id}`, ctx.signal)
    : null
  const manifest = current?.manifest ?? null
  const story = storyTimeline(ctx, `/v1/audit/fanouts/${fanout.fanout_id}`)
  const allFacts = manifest?.facts ?? []
  const contested = allFacts.filter((fact) => fact.status === 'contested')
  const settled = allFacts.filter((fact) => fact.status !== 'contested')

  append(main, [
    facts([
      ['Status', statusBadge(fanout.status)],
      ['Verdict', manifest ? verdictBadge(manifest.verdict) : 'not reconciled yet'],
      ['Directive', manifest ? directiveBadge(manifest.directive) : '—'],
      ['Question', fanout.question],
      ['Orchestrator', h('code', null, fanout.orchestrator_id)],
      ['Deadline', timeOf(fanout.deadline, true)],
      ['Created', timeOf(fanout.created_at, true)],
    ]),
    manifest && manifest.reasons.length > 0
      ? h(
          'ul',
          { class: 'reasons', 'aria-label': 'Why it halted' },
          manifest.reasons.map((reason) =>
            h(
              'li',
              null,
              h('span', { class: 'chip' }, reason.code.replace(/_/g, ' ')),
              ' ',
              h('code', null, reason.subject),
            ),
          ),
        )
      : null,
    section(
      `Contested facts (${contested.length})`,
      contested.length === 0
        ? h('p', { class: 'empty' }, 'No contested facts.')
        : contested.map((fact) => factView(fact)),
    ),
    section(
      'Coverage',
      manifest ? coverageView(manifest.coverage) : h('p', { class: 'empty' }, 'Not reconciled yet.'),
    ),
    section('Resolution', resolution(ctx, fanout, current, story)),
    settled.length > 0
      ? section(
          `Other facts (${settled.length})`,
          settled.map((fact) => factView(fact)),
        )
      : null,
    section(
      'Story',
      h('p', { class: 'hint' }, 'Every audit record about this fan-out, in log order.'),
      story,
    ),
  ])
}

function resolution(
  ctx: Parameters<View>[0],
  fanout: Fanout,
  current: Envelope<ReconciliationManifest> | null,
  story: HTMLElement,
): Child {
  if (fanout.status === 'halted' && current) {
    return fanoutResolutionForm(ctx, fanout, current.manifest, () => {
      story.replaceWith(storyTimeline(ctx, `/v1/audit/fanouts/${fanout.fanout_id}`))
    })
  }
  if (current) {
    return [
      fanout.status === 'resolved'
        ? null
        : h('p', null, `Only a halted fan-out can be resolved; this one is ${fanout.status}.`),
      manifestSummary(current, ctx),
    ]
  }
  return h('p', null, 'Nothing to resolve before the fan-out is reconciled.')
}

/** "/applies_to" → "applies_to" (RFC 6901 unescaping of a one-level pointer). */
function pointerKey(pointer: string): string {
  return pointer.replace(/^\//, '').replace(/~1/g, '/').replace(/~0/g, '~')
}

function factView(fact: ReconciledFact): HTMLElement {
  const claimsByRef = new Map(fact.claims.map((claim) => [claim.claim_ref, claim]))
  const echoOf = new Map<string, string>()
  for (const echo of fact.echoes) for (const ref of echo.claims) echoOf.set(ref, echo.source)
  // A carve-out: a qualifier one position has and the other lacks entirely.
  const carveOuts = new Map<string, Set<string>>()
  for (const conflict of fact.conflicts) {
    for (const difference of conflict.qualifier_differences) {
      const owner =
        'a' in difference && !('b' in difference)
          ? conflict.a
          : 'b' in difference && !('a' in difference)
            ? conflict.b
            : null
      if (!owner) continue
      const keys = carveOuts.get(owner) ?? new Set<string>()
      keys.add(pointerKey(difference.pointer))
      carveOuts.set(owner, keys)
    }
  }
  return h(
    'article',
    { class: 'fact', 'aria-label': `Fact ${fact.fact}` },
    h('h3', null, h('code', null, fact.fact), ' ', statusBadge(fact.status)),
    h(
      'p',
      { class: 'hint' },
      fact.rule ? `Decided by ${fact.rule.replace(/_/g, ' ')}. ` : '',
      fact.reason ? `Reason: ${fact.reason.replace(/_/g, ' ')}. ` : '',
      fact.answer ? ['Answer: ', h('strong', null, positionText(fact.answer))] : '',
    ),
    fact.positions.length === 0
      ? h('p', { class: 'empty' }, 'No claims about this fact.')
      : h(
          'div',
          { class: 'positions' },
          fact.positions.map((position) =>
            positionView(position, claimsByRef, echoOf, carveOuts.get(position.position_id) ?? new Set()),
          ),
        ),
    fact.conflicts.length > 0 ? conflictsView(fact) : null,
    fact.echoes.length > 0
      ? h(
          'div',
          { class: 'echoes' },
          h('h4', null, 'Echoes'),
          h(
            'ul',
            null,
            fact.echoes.map((echo) =>
              h(
                'li',
                null,
                h('span', { class: 'chip echo' }, 'echo'),
                ' ',
                h('code', null, echo.source),
                ` is cited by ${echo.claims.join(', ')}: one source, counted once.`,
              ),
            ),
          ),
        )
      : null,
  )
}

function positionView(
  position: FactPosition,
  claimsByRef: Map<string, FactClaim>,
  echoOf: Map<string, string>,
  carveOuts: Set<string>,
): HTMLElement {
  const qualifiers = Object.entries(position.qualifiers ?? {})
  return h(
    'div',
    { class: position.lost_by ? 'position side lost' : 'position side' },
    h(
      'h4',
      null,
      position.position_id,
      position.lost_by
        ? h('span', { class: 'chip' }, ` lost by ${position.lost_by.replace(/_/g, ' ')}`)
        : null,
    ),
    facts([
      [
        'Value',
        typeof position.value === 'object' && position.value !== null
          ? jsonBlock(position.value)
          : valueText(position.value),
      ],
      ['Effective', position.effective_date ?? '—'],
      [
        'Qualifiers',
        qualifiers.length === 0
          ? 'none'
          : h(
              'ul',
              { class: 'qualifiers' },
              qualifiers.map(([key, value]) =>
                h(
                  'li',
                  { class: carveOuts.has(key) ? 'carve-out' : null },
                  h('code', null, `${key}=${valueText(value)}`),
                  carveOuts.has(key) ? h('span', { class: 'chip carve' }, 'carve-out') : null,
                ),
              ),
            ),
      ],
      ['Independent sources', String(position.independent_sources)],
    ]),
    h('h5', null, `Claims (${position.claims.length})`),
    h(
      'ul',
      { class: 'claims' },
      position.claims.map((ref) => claimView(ref, claimsByRef.get(ref), echoOf.get(ref))),
    ),
  )
}

function claimView(ref: string, claim: FactClaim | undefined, echoSource: string | undefined): HTMLElement {
  return h(
    'li',
    { class: 'claim' },
    h(
      'p',
      null,
      h('code', null, ref),
      claim ? ` from ${claim.subtask_id} (revision ${claim.revision})` : '',
      claim?.confidence !== null && claim?.confidence !== undefined ? `, confidence ${claim.confidence}` : '',
      claim?.out_of_scope ? h('span', { class: 'chip warn' }, 'out of scope') : null,
      echoSource ? h('span', { class: 'chip echo' }, 'echo') : null,
    ),
    claim && claim.sources.length > 0
      ? h(
          'ul',
          { class: 'sources' },
          claim.sources.map((source) =>
            h(
              'li',
              null,
              h('code', { class: 'uri' }, source.uri),
              source.excerpt ? h('q', null, source.excerpt) : null,
              source.observed_at ? [' observed ', timeOf(source.observed_at, true)] : null,
            ),
          ),
        )
      : null,
  )
}

function conflictsView(fact: ReconciledFact): HTMLElement {
  return h(
    'div',
    { class: 'conflicts' },
    h('h4', null, 'Conflicts'),
    scrollingTable(
      `Conflicts between positions of ${fact.fact}`,
      h(
        'table',
        null,
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            h('th', { scope: 'col' }, 'Positions'),
            h('th', { scope: 'col' }, 'Differ in'),
            h('th', { scope: 'col' }, 'Qualifier differences'),
          ),
        ),
        h(
          'tbody',
          null,
          fact.conflicts.map((conflict) =>
            h(
              'tr',
              null,
              h('th', { scope: 'row' }, `${conflict.a} vs ${conflict.b}`),
              h('td', null, conflict.differs.join(', ') || '—'),
              h(
                'td',
                null,
                conflict.qualifier_differences.length === 0
                  ? '—'
                  : h(
                      'ul',
                      null,
                      conflict.qualifier_differences.map((d) => {
                        const carve = !('a' in d) || !('b' in d)
                        return h(
                          'li',
                          null,
                          h('code', null, d.pointer),
                          ': ',
                          'a' in d
                            ? h('mark', null, `${conflict.a} ${valueText(d.a)}`)
                            : `${conflict.a} absent`,
                          ' / ',
                          'b' in d
                            ? h('mark', null, `${conflict.b} ${valueText(d.b)}`)
                            : `${conflict.b} absent`,
                          carve ? h('span', { class: 'chip carve' }, 'carve-out') : null,
                        )
                      }),
                    ),
              ),
            ),
          ),
        ),
      ),
    ),
  )
}

function coverageView(coverage: Coverage): Child {
  const list = (title: string, items: Child[]) =>
    items.length === 0
      ? null
      : h(
          'div',
          { class: 'coverage-list' },
          h('h3', null, title),
          h(
            'ul',
            null,
            items.map((item) => h('li', null, item)),
          ),
        )
  return [
    scrollingTable(
      'Subtasks',
      h(
        'table',
        null,
        h('caption', null, 'Subtasks and their latest returns'),
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ['Subtask', 'Status', 'Revision', 'Late', 'Received'].map((label) =>
              h('th', { scope: 'col' }, label),
            ),
          ),
        ),
        h(
          'tbody',
          null,
          coverage.subtasks.map((subtask) =>
            h(
              'tr',
              { class: subtask.status === 'MISSING' ? 'missing' : null },
              h('th', { scope: 'row' }, h('code', null, subtask.subtask_id)),
              h('td', null, statusBadge(subtask.status)),
              h('td', null, subtask.revision === null ? '—' : String(subtask.revision)),
              h('td', null, subtask.late ? 'late' : 'no'),
              h('td', null, timeOf(subtask.received_at, true)),
            ),
          ),
        ),
      ),
    ),
    list(
      'Missing',
      coverage.missing_subtasks.map((id) => h('code', null, id)),
    ),
    list(
      'Late',
      coverage.late_subtasks.map((id) => h('code', null, id)),
    ),
    list(
      'Needs context',
      coverage.needs_context.map((item) => [
        h('code', null, item.subtask_id),
        ' asks: ',
        h('q', null, item.blocking_question),
      ]),
    ),
    list(
      'Blocked',
      coverage.blocked.map((item) => [h('code', null, item.subtask_id), ': ', item.blocking_reason]),
    ),
    list(
      'Concerns',
      coverage.concerns.map((item) => [h('code', null, item.subtask_id), ': ', item.concerns.join('; ')]),
    ),
    list(
      'Facts nobody claimed',
      coverage.uncovered_facts.map((fact) => h('code', null, fact)),
    ),
    list(
      'Overlapping owners',
      coverage.overlaps.map((overlap) => [
        h('code', null, overlap.fact),
        ' owned by ',
        overlap.subtasks.join(', '),
      ]),
    ),
    rawJson('Coverage (JSON)', coverage),
  ]
}
