import { ApiError, problemAlert } from '../api.ts'
import { type Child, h, replaceChildren } from '../dom.ts'
import { parseFanoutAnswer } from '../fanout-answer.ts'
import type { Envelope, Fanout, Outcome, Position, ReconciliationManifest } from '../shapes.ts'
import type { ViewContext } from '../view.ts'
import { manifestSummary } from './manifest-summary.ts'
import { positionText } from './position-text.ts'

const READINGS = ['success', 'partial', 'failure'] as const

interface Field {
  /** The element that receives focus when the field is wrong. */
  focusTarget: HTMLElement
  /** Elements marked aria-invalid while wrong. */
  controls: HTMLElement[]
  error: HTMLElement
}

function fieldError(id: string): HTMLElement {
  return h('p', { id, class: 'field-error' })
}

function setFieldError(field: Field, message: string | null): void {
  field.error.textContent = message ?? ''
  for (const control of field.controls) {
    if (message) control.setAttribute('aria-invalid', 'true')
    else control.removeAttribute('aria-invalid')
  }
}

/**
 * Shared form mechanics: validate every field, focus the first wrong one, send, then replace the form with the
 * signed manifest it produced, or explain the refusal (a 403 says which role is needed) without losing the input.
 */
function resolutionForm(
  ctx: ViewContext,
  idPrefix: string,
  fields: Child[],
  validate: () => { ok: false } | { ok: true; body: unknown },
  path: string,
  onResolved: (envelope: Envelope) => void,
): HTMLElement {
  const result = h('div', { class: 'form-result' })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Resolve and sign')
  const form = h(
    'form',
    { class: 'resolution-form', novalidate: true, 'aria-labelledby': `${idPrefix}-title` },
    h('h3', { id: `${idPrefix}-title` }, 'Resolve this escalation'),
    h(
      'p',
      { class: 'hint' },
      'Resolving signs a new final manifest (verdict HUMAN_RESOLVED, directive PROCEED) that supersedes the HALT. ',
      'Every orchestrator receives it; it cannot be undone.',
    ),
    fields,
    h('div', { class: 'form-actions' }, submit),
    result,
  )
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    result.replaceChildren()
    const checked = validate()
    if (!checked.ok) return
    submit.disabled = true
    submit.textContent = 'Signing…'
    try {
      const envelope = await ctx.api.post<Envelope>(path, checked.body, ctx.signal)
      const done = h(
        'div',
        { class: 'resolved', tabindex: -1, role: 'status' },
        h('h3', null, 'Resolved: the new manifest'),
        manifestSummary(envelope, ctx),
      )
      form.replaceWith(done)
      done.focus()
      onResolved(envelope)
    } catch (err) {
      if (ctx.signal.aborted) return
      submit.disabled = false
      submit.textContent = 'Resolve and sign'
      replaceChildren(result, problemAlert(err, 'resolve escalations'))
      if (err instanceof ApiError && err.status === 403) submit.focus()
    }
  })
  return form
}

function rationaleField(idPrefix: string): { element: HTMLElement; field: Field; value: () => string } {
  const id = `${idPrefix}-rationale`
  const error = fieldError(`${id}-error`)
  const textarea = h('textarea', {
    id,
    name: 'rationale',
    rows: 3,
    required: true,
    maxlength: 10000,
    'aria-describedby': `${id}-hint ${id}-error`,
  })
  return {
    element: h(
      'div',
      { class: 'field' },
      h('label', { for: id }, 'Rationale'),
      textarea,
      h(
        'p',
        { id: `${id}-hint`, class: 'hint' },
        'Why this answer. It is signed into the manifest and the audit log.',
      ),
      error,
    ),
    field: clearOnChange({ focusTarget: textarea, controls: [textarea], error }, textarea),
    value: () => textarea.value.trim(),
  }
}

/** A field's message goes as soon as the operator changes it: the next submit checks it again. */
function clearOnChange(field: Field, ...inputs: HTMLElement[]): Field {
  for (const input of inputs) {
    input.addEventListener('input', () => setFieldError(field, null))
    input.addEventListener('change', () => setFieldError(field, null))
  }
  return field
}

/** Marks every wrong field, focuses the first; true when all are right. */
function report(checks: [Field, string | null][]): boolean {
  let first: Field | null = null
  for (const [field, message] of checks) {
    setFieldError(field, message)
    if (message && !first) first = field
  }
  first?.focusTarget.focus()
  return first === null
}

/** The resolution of a HALTed outcome: the outcome, a rationale and, optionally, who acts on it. */
export function outcomeResolutionForm(
  ctx: ViewContext,
  outcome: Outcome,
  onResolved: (envelope: Envelope) => void,
): HTMLElement {
  const prefix = 'resolve-outcome'
  const readingsBy = new Map<string, string[]>()
  for (const interpretation of outcome.interpretations) {
    const list = readingsBy.get(interpretation.outcome_interpretation) ?? []
    list.push(interpretation.orchestrator_id)
    readingsBy.set(interpretation.outcome_interpretation, list)
  }
  const radios = READINGS.map((reading) =>
    h('input', { type: 'radio', name: 'outcome', value: reading, id: `${prefix}-${reading}` }),
  )
  const outcomeError = fieldError(`${prefix}-outcome-error`)
  const outcomeFieldset = h(
    'fieldset',
    { 'aria-describedby': `${prefix}-outcome-error` },
    h('legend', null, 'Resolved outcome'),
    READINGS.map((reading, i) =>
      h(
        'div',
        { class: 'choice' },
        radios[i],
        h(
          'label',
          { for: `${prefix}-${reading}` },
          reading,
          readingsBy.has(reading)
            ? h('span', { class: 'choice-note' }, ` — read by ${readingsBy.get(reading)?.join(', ')}`)
            : null,
        ),
      ),
    ),
    outcomeError,
  )
  const outcomeField = clearOnChange(
    { focusTarget: radios[0]!, controls: radios, error: outcomeError },
    ...radios,
  )
  const rationale = rationaleField(prefix)
  const owners = [
    ...new Set([...outcome.expected_orchestrators, ...outcome.interpretations.map((i) => i.orchestrator_id)]),
  ].sort()
  const ownerSelect = h(
    'select',
    { id: `${prefix}-owner`, name: 'action_owner', 'aria-describedby': `${prefix}-owner-hint` },
    h('option', { value: '' }, 'By the usual rule'),
    owners.map((owner) => h('option', { value: owner }, owner)),
  )
  const ownerField = h(
    'div',
    { class: 'field' },
    h('label', { for: `${prefix}-owner` }, 'Action owner (optional)'),
    ownerSelect,
    h(
      'p',
      { id: `${prefix}-owner-hint`, class: 'hint' },
      'The one orchestrator that performs any follow-up, so no side effect happens twice.',
    ),
  )
  return resolutionForm(
    ctx,
    prefix,
    [outcomeFieldset, rationale.element, ownerField],
    () => {
      const chosen = radios.find((radio) => radio.checked)?.value
      const ok = report([
        [outcomeField, chosen ? null : 'Choose the outcome.'],
        [rationale.field, rationale.value() ? null : 'Give a rationale: it is signed into the manifest.'],
      ])
      if (!ok || !chosen) return { ok: false }
      const owner = ownerSelect.value
      return {
        ok: true,
        body: { outcome: chosen, rationale: rationale.value(), ...(owner ? { action_owner: owner } : {}) },
      }
    },
    `/v1/outcomes/${outcome.outcome_id}/resolution`,
    onResolved,
  )
}

/** The resolution of a HALTed fan-out: an answer (or none) for every contested fact, and a rationale. */
export function fanoutResolutionForm(
  ctx: ViewContext,
  fanout: Fanout,
  halt: ReconciliationManifest,
  onResolved: (envelope: Envelope) => void,
): HTMLElement {
  const prefix = 'resolve-fanout'
  const contested = (halt.facts ?? []).filter((fact) => fact.status === 'contested')
  const readers: {
    field: Field
    read: () => { ok: true; answer: Position | null } | { ok: false; message: string }
  }[] = []
  const fieldsets = contested.map((fact, f) => {
    const name = `${prefix}-fact-${f}`
    const options: { label: Child; answer: Position | null | 'custom' }[] = [
      ...fact.positions.map((position) => ({
        label: [h('strong', null, position.position_id), ': ', positionText(position)],
        answer: {
          value: position.value,
          effective_date: position.effective_date,
          qualifiers: position.qualifiers,
        },
      })),
      { label: 'No answer (leave the fact open)', answer: null },
      { label: 'Another answer (JSON)', answer: 'custom' as const },
    ]
    const radios = options.map((_, i) =>
      h('input', { type: 'radio', name, id: `${name}-${i}`, value: String(i) }),
    )
    const customId = `${name}-custom`
    const custom = h('textarea', {
      id: customId,
      rows: 3,
      class: 'code',
      spellcheck: 'false',
      placeholder: '{"value": …, "effective_date": null, "qualifiers": {}}',
      'aria-describedby': `${name}-error`,
    })
    const customField = h(
      'div',
      { class: 'field custom-answer', hidden: true },
      h('label', { for: customId }, `Answer for ${fact.fact}`),
      custom,
    )
    const error = fieldError(`${name}-error`)
    for (const radio of radios) {
      radio.addEventListener('change', () => {
        customField.hidden = options[Number(radio.value)]?.answer !== 'custom'
      })
    }
    const field = clearOnChange({ focusTarget: radios[0]!, controls: radios, error }, ...radios, custom)
    readers.push({
      field,
      read: () => {
        const index = radios.findIndex((radio) => radio.checked)
        const option = options[index]
        if (!option) return { ok: false, message: `Choose an answer for ${fact.fact}.` }
        if (option.answer !== 'custom') return { ok: true, answer: option.answer }
        const parsed = parseFanoutAnswer(custom.value)
        if ('error' in parsed) {
          field.focusTarget = custom
          return { ok: false, message: parsed.error }
        }
        return { ok: true, answer: parsed.answer }
      },
    })
    return h(
      'fieldset',
      { 'aria-describedby': `${name}-error` },
      h('legend', null, 'Answer for ', h('code', null, fact.fact)),
      options.map((option, i) =>
        h('div', { class: 'choice' }, radios[i], h('label', { for: `${name}-${i}` }, option.label)),
      ),
      customField,
      error,
    )
  })
  const rationale = rationaleField(prefix)
  return resolutionForm(
    ctx,
    prefix,
    [
      contested.length === 0
        ? h(
            'p',
            null,
            'No fact is contested: the fan-out halted on its coverage. A rationale is all it takes.',
          )
        : null,
      fieldsets,
      rationale.element,
    ],
    () => {
      const answers = readers.map((reader) => reader.read())
      const ok = report([
        ...readers.map((reader, i): [Field, string | null] => {
          const answer = answers[i]!
          return [reader.field, answer.ok ? null : answer.message]
        }),
        [rationale.field, rationale.value() ? null : 'Give a rationale: it is signed into the manifest.'],
      ])
      if (!ok) return { ok: false }
      return {
        ok: true,
        body: {
          facts: contested.map((fact, i) => {
            const answer = answers[i]!
            return { fact: fact.fact, answer: answer.ok ? answer.answer : null }
          }),
          rationale: rationale.value(),
        },
      }
    },
    `/v1/fanouts/${fanout.fanout_id}/resolution`,
    onResolved,
  )
}
