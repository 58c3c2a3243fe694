import { problemAlert } from '../api.ts'
import { ageOf, facts, h, replaceChildren, section, timeOf } from '../dom.ts'
import { type CheckpointAnswer, checkpointFacts, type VerifyReport } from '../shapes.ts'
import type { View } from '../view.ts'

/** The audit log's state: its size and latest signed checkpoint, and a check of the whole log on demand. */
export const logView: View = (ctx, main) => {
  const state = h(
    'div',
    { class: 'log-state', 'aria-busy': 'true' },
    h('p', { class: 'loading' }, 'Loading…'),
  )
  const refresh = h('button', { type: 'button' }, 'Refresh')
  let ageTimer: ReturnType<typeof setInterval> | undefined
  ctx.onLeave(() => clearInterval(ageTimer))

  const load = async () => {
    state.setAttribute('aria-busy', 'true')
    clearInterval(ageTimer)
    try {
      const answer = await ctx.api.get<CheckpointAnswer>('/v1/audit/checkpoint', ctx.signal)
      const c = checkpointFacts(answer)
      const age = h('span', { class: 'age' }, `${ageOf(c.at)} ago`)
      ageTimer = setInterval(() => {
        age.textContent = `${ageOf(c.at)} ago`
      }, 1000)
      replaceChildren(
        state,
        facts([
          ['Tree size', h('strong', { class: 'big-number' }, c.treeSize === null ? '—' : String(c.treeSize))],
          ['Last checkpoint', [age, ' (', timeOf(c.at, true), ')']],
          ['Head seq', c.headSeq === null ? '—' : String(c.headSeq)],
          [
            'Root hash',
            c.rootHash ? h('code', { class: 'hash' }, c.rootHash) : 'not published by this server',
          ],
          ['Head hash', c.headHash ? h('code', { class: 'hash' }, c.headHash) : '—'],
          ['Origin', c.origin ?? '—'],
        ]),
        answer.note
          ? h(
              'details',
              { class: 'raw' },
              h('summary', null, 'Signed checkpoint note'),
              h('pre', { class: 'json' }, answer.note),
            )
          : null,
      )
    } catch (err) {
      if (ctx.signal.aborted) return
      replaceChildren(state, problemAlert(err, 'read the audit log'))
    } finally {
      state.removeAttribute('aria-busy')
    }
  }
  refresh.addEventListener('click', () => void load())

  const verifyButton = h('button', { type: 'button', class: 'primary' }, 'Verify the log')
  const progress = h('div', { class: 'verify-progress', role: 'status' })
  const result = h('div', { class: 'verify-result' })
  verifyButton.addEventListener('click', async () => {
    verifyButton.disabled = true
    result.replaceChildren()
    const started = performance.now()
    const elapsed = h('span', null, '0.0 s')
    replaceChildren(
      progress,
      h('label', { for: 'verify-bar' }, 'Verifying the log… '),
      h('progress', { id: 'verify-bar' }),
      ' ',
      elapsed,
    )
    const tick = setInterval(() => {
      elapsed.textContent = `${((performance.now() - started) / 1000).toFixed(1)} s`
    }, 100)
    try {
      const report = await ctx.api.get<VerifyReport>('/v1/audit/verify', ctx.signal)
      const seconds = ((performance.now() - started) / 1000).toFixed(1)
      replaceChildren(progress, `Finished in ${seconds} s.`)
      replaceChildren(result, verifyResult(report))
    } catch (err) {
      if (ctx.signal.aborted) return
      replaceChildren(progress, 'Verification did not run.')
      replaceChildren(result, problemAlert(err, 'verify the audit log'))
    } finally {
      clearInterval(tick)
      verifyButton.disabled = false
    }
  })

  main.append(
    h(
      'p',
      { class: 'lead' },
      'Every change Arbiter makes is an append-only audit record, chained by hash and placed in a Merkle tree whose signed checkpoints let anyone check the log.',
    ),
    section('State', state, h('div', { class: 'form-actions' }, refresh)),
    section(
      'Verify',
      h(
        'p',
        { class: 'hint' },
        'Arbiter recomputes the hash chain and the tree over every record and checks each stored checkpoint against them.',
      ),
      h('div', { class: 'form-actions' }, verifyButton),
      progress,
      result,
    ),
  )
  void load()
}

function verifyResult(report: VerifyReport): HTMLElement {
  const details = facts([
    ['Records checked', String(report.checked)],
    ['Head seq', report.head_seq === null ? '—' : String(report.head_seq)],
    ['Tree size', report.tree_size === undefined ? '—' : String(report.tree_size)],
    ['Root hash', report.root_hash ? h('code', { class: 'hash' }, report.root_hash) : '—'],
    [
      'Checkpoints checked',
      report.checkpoints_checked === undefined ? '—' : String(report.checkpoints_checked),
    ],
  ])
  if (report.ok) {
    return h(
      'div',
      { class: 'outcome-box ok' },
      h(
        'p',
        { class: 'outcome-title' },
        `✓ The log verifies: ${report.checked} records checked, nothing altered.`,
      ),
      details,
    )
  }
  return h(
    'div',
    { class: 'outcome-box bad', role: 'alert' },
    h(
      'p',
      { class: 'outcome-title' },
      `✗ The log does not verify: the first bad record is seq ${report.first_bad_seq ?? 'unknown'}.`,
    ),
    report.first_bad_seq !== null
      ? h('p', null, h('a', { href: `#/proofs/${report.first_bad_seq}` }, 'Inspect that record’s proof'))
      : null,
    details,
  )
}
