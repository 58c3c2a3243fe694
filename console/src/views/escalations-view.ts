import { problemAlert } from '../api.ts'
import { ageOf, h, section, timeOf, verdictBadge } from '../dom.ts'
import { type Escalation, escalationTarget, type Fanout } from '../shapes.ts'
import type { View } from '../view.ts'

const RECEIPT_KINDS: Record<string, string> = {
  criteria: 'criteria differ',
  evidence_seen: 'judged different evidence',
  interpretation: 'same criteria and evidence, different readings',
}

/** The escalation queue: HALTed cases waiting for a person, open ones first, then the latest resolved. */
export const escalationsView: View = async (ctx, main) => {
  main.append(
    h(
      'p',
      { class: 'lead' },
      'Cases Arbiter could not settle by its rules. Each waits for a person’s resolution; every orchestrator then receives the same signed answer.',
    ),
  )
  let open: Escalation[]
  let resolved: Escalation[]
  try {
    ;[open, resolved] = await Promise.all([
      ctx.api.getAll<Escalation>('/v1/escalations?status=open&limit=500', 10, ctx.signal),
      ctx.api.getAll<Escalation>('/v1/escalations?status=resolved&limit=500', 10, ctx.signal),
    ])
  } catch (err) {
    if (ctx.signal.aborted) return
    main.append(problemAlert(err, 'read the escalation queue'))
    return
  }
  // The API lists oldest first; the longest-waiting open case is the most urgent, the latest resolution the most relevant.
  const latestResolved = resolved.slice(-50).reverse()
  const fanoutKeys = await fanoutKeysOf([...open, ...latestResolved], ctx)
  const card = (escalation: Escalation) => escalationCard(escalation, fanoutKeys)
  main.append(
    section(
      `Open (${open.length})`,
      open.length === 0
        ? h('p', { class: 'empty' }, 'No open escalations: nothing is waiting for a decision.')
        : h(
            'ol',
            { class: 'cards', 'aria-label': 'Open escalations, longest waiting first' },
            open.map(card),
          ),
    ),
    section(
      `Resolved (${resolved.length})`,
      latestResolved.length === 0
        ? h('p', { class: 'empty' }, 'None resolved yet.')
        : h(
            'ol',
            { class: 'cards', 'aria-label': 'Resolved escalations, latest first' },
            latestResolved.map(card),
          ),
    ),
  )
}

/** The most fan-outs whose names one screen reads (one request each). */
const MAX_FANOUT_NAMES = 200

/**
 * A fan-out's escalation names it only by id; its `fanout_key` (what the orchestrator called it) comes from the
 * fan-out itself, which any key may read. A fan-out that cannot be read keeps its id.
 */
async function fanoutKeysOf(
  escalations: Escalation[],
  ctx: Parameters<typeof escalationsView>[0],
): Promise<Map<string, string>> {
  const ids = [...new Set(escalations.map((e) => e.fanout_id).filter((id): id is string => !!id))]
  const keys = new Map<string, string>()
  await Promise.all(
    ids.slice(0, MAX_FANOUT_NAMES).map(async (id) => {
      try {
        const fanout = await ctx.api.get<Fanout>(`/v1/fanouts/${id}`, ctx.signal)
        keys.set(id, `${fanout.orchestrator_id} / ${fanout.fanout_key}`)
      } catch {
        // Shown by id instead.
      }
    }),
  )
  return keys
}

function escalationCard(escalation: Escalation, fanoutKeys: Map<string, string>): HTMLElement {
  const target = escalationTarget(escalation)
  const name =
    escalation.subagent_id && escalation.run_id
      ? `${escalation.subagent_id} / ${escalation.run_id}`
      : ((escalation.fanout_id ? fanoutKeys.get(escalation.fanout_id) : undefined) ??
        escalation.fanout_id ??
        escalation.outcome_id ??
        escalation.manifest_id)
  const receipt = escalation.interpretation_divergence_receipt
  return h(
    'li',
    { class: `card escalation ${escalation.status}` },
    h(
      'p',
      { class: 'card-title' },
      target.href === null ? h('span', null, name) : h('a', { href: target.href }, name),
      ' ',
      h('span', { class: 'chip' }, target.kindLabel),
    ),
    h(
      'p',
      { class: 'card-meta' },
      verdictBadge(escalation.verdict),
      receipt ? h('span', null, RECEIPT_KINDS[receipt.kind] ?? receipt.kind) : null,
      receipt
        ? h('span', null, `${receipt.pairs.length} pair${receipt.pairs.length === 1 ? '' : 's'}`)
        : null,
    ),
    h(
      'p',
      { class: 'card-meta' },
      // One span: the line's flex gaps would otherwise split the sentence apart.
      escalation.status === 'open'
        ? h(
            'span',
            null,
            `Waiting ${ageOf(escalation.opened_at)}, since `,
            timeOf(escalation.opened_at, true),
          )
        : h('span', null, 'Resolved ', timeOf(escalation.resolved_at, true)),
    ),
  )
}
