/**
 * When two agents count as "the same model" or "the same context". Agents and orchestrators spell model
 * names and context ids by hand ("Model-L", " model-l"), so the comparison ignores surrounding white space
 * and case; without that, a judge could slip past the iron law by capitalising its model's name.
 */

/** The form in which models and context ids are compared: trimmed, then lower-cased. */
export function normalizeIdentity(text: string): string {
  return text.trim().toLowerCase()
}

/** An agent as the panel rules see it: which model it runs on, in which context. */
export interface AgentIdentity {
  model: string
  context_id: string
}

export function sameModel(a: AgentIdentity, b: AgentIdentity): boolean {
  return normalizeIdentity(a.model) === normalizeIdentity(b.model)
}

/** Same model *and* same context: the same blind spots, so no added signal. */
export function sameModelAndContext(a: AgentIdentity, b: AgentIdentity): boolean {
  return sameModel(a, b) && normalizeIdentity(a.context_id) === normalizeIdentity(b.context_id)
}
