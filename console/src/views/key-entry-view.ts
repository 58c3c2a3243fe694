import { ApiError } from '../api.ts'
import { h, replaceChildren } from '../dom.ts'

/** The first screen: the operator types the API key once; `accept` checks it with Arbiter and keeps it. */
export function keyEntryView(main: HTMLElement, accept: (key: string) => Promise<void>): void {
  const input = h('input', {
    id: 'api-key',
    name: 'api-key',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
    'aria-describedby': 'api-key-hint api-key-error',
  })
  const error = h('p', { id: 'api-key-error', class: 'field-error' })
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Open the console')
  const form = h(
    'form',
    { class: 'key-form', novalidate: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'api-key' }, 'API key'),
      input,
      h(
        'p',
        { id: 'api-key-hint', class: 'hint' },
        'Kept only in this tab’s session storage and sent to Arbiter with each request; closing the tab forgets it. ',
        'Any role can watch the feed; resolving escalations and reading the audit log need an ops or admin key.',
      ),
      error,
    ),
    submit,
  )
  const showError = (message: string) => {
    error.textContent = message
    input.setAttribute('aria-invalid', 'true')
    input.focus()
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    const key = input.value.trim()
    if (key === '') {
      showError('Enter an API key.')
      return
    }
    submit.disabled = true
    submit.textContent = 'Checking the key…'
    try {
      await accept(key)
    } catch (err) {
      submit.disabled = false
      submit.textContent = 'Open the console'
      if (err instanceof ApiError && err.status === 401)
        showError('Arbiter does not know this key, or it was revoked.')
      else if (err instanceof ApiError && err.status === 0)
        showError('Arbiter could not be reached. Try again.')
      else showError(err instanceof Error ? err.message : String(err))
    }
  })
  replaceChildren(
    main,
    h('h1', { tabindex: -1 }, 'Arbiter ops console'),
    h(
      'p',
      { class: 'lead' },
      'See disagreements side by side, resolve escalations, follow each case’s story in the audit log and check the log itself.',
    ),
    form,
  )
}
