/**
 * When two agents count as "the same model" or "the same context": the iron law, distinct council models, the
 * findings' confidence and a fan-out worker all compare agents by these identities. Model names and context
 * ids are spelled by hand, and by agents that can be told to dodge a rule, so a plain string comparison is not
 * enough: "model-m" followed by a zero-width space, a Cyrillic "о", a soft hyphen or a bidi override all look
 * like "model-m" to a person and would pass for another model. An identity is therefore the text
 * NFKC-normalised (fullwidth letters and ligatures fold to their ASCII spelling) and trimmed, and it must then
 * be 1–200 printable ASCII characters (U+0021–U+007E); everything that could hide a second spelling of one name
 * is refused. Two identities are the same when they are equal after ASCII lower-casing ("Model-L" is
 * "model-l"). Values are stored and returned as submitted: only comparisons use the identity.
 */

/** The longest identity, counted after normalisation. */
export const MAX_IDENTITY_LENGTH = 200

/** The text as it is checked: NFKC-normalised, then trimmed. */
export function identityForm(text: string): string {
  return text.normalize('NFKC').trim()
}

const PRINTABLE_ASCII = /^[\x21-\x7e]+$/

/**
 * Why `text` is not a valid model name or context id, or null when it is. The message names the first
 * character refused (as a code point, since the character itself may be invisible).
 */
export function identityProblem(text: string): string | null {
  const form = identityForm(text)
  if (form.length === 0) return 'must not be empty'
  if (form.length > MAX_IDENTITY_LENGTH) {
    return `at most ${MAX_IDENTITY_LENGTH} characters (after NFKC normalisation and trimming)`
  }
  if (PRINTABLE_ASCII.test(form)) return null
  const index = [...form].findIndex((char) => !PRINTABLE_ASCII.test(char))
  const char = [...form][index]!
  return `must be printable ASCII (U+0021–U+007E) after NFKC normalisation and trimming; character ${index + 1} is ${codePoint(char)}`
}

/** True when `text` is a valid model name or context id. */
export function isValidIdentity(text: string): boolean {
  return identityProblem(text) === null
}

/**
 * The form in which models and context ids are compared: {@link identityForm}, ASCII letters lower-cased. Only
 * ASCII is folded, so the key never makes two texts equal that NFKC keeps apart; it is total, so texts stored
 * before the rule was enforced still compare (each as itself).
 */
export function identityKey(text: string): string {
  return identityForm(text).replace(/[A-Z]/g, (letter) => letter.toLowerCase())
}

/** An agent as the independence rules see it: which model it runs on, in which context. */
export interface AgentIdentity {
  model: string
  context_id: string
}

export function sameModel(a: Pick<AgentIdentity, 'model'>, b: Pick<AgentIdentity, 'model'>): boolean {
  return identityKey(a.model) === identityKey(b.model)
}

/** Same model *and* same context: the same blind spots, so no added signal. */
export function sameModelAndContext(a: AgentIdentity, b: AgentIdentity): boolean {
  return sameModel(a, b) && identityKey(a.context_id) === identityKey(b.context_id)
}

/** `U+200B`: a character named by its code point. */
function codePoint(char: string): string {
  return `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`
}
