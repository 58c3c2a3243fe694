import type { Json, Position } from './shapes.ts'

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const MEMBERS = ['value', 'effective_date', 'qualifiers']

/** A YYYY-MM-DD date that exists in the calendar (no 2025-02-30). */
function isCalendarDate(text: string): boolean {
  const match = DATE.exec(text)
  if (!match) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

/**
 * Reads an answer typed by hand for a contested fact, `{value, effective_date?, qualifiers?}`, with the rules
 * Arbiter applies (value not null, a calendar date or null, qualifiers an object of strings, numbers and booleans)
 * so the operator learns what is wrong before anything is sent. Returns the answer or a message.
 */
export function parseFanoutAnswer(text: string): { answer: Position } | { error: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return { error: 'Not valid JSON.' }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { error: 'Write an object: {"value": …, "effective_date": …, "qualifiers": {…}}.' }
  }
  const object = parsed as Record<string, unknown>
  const unknown = Object.keys(object).filter((key) => !MEMBERS.includes(key))
  if (unknown.length > 0) return { error: `Unknown member ${unknown.join(', ')}.` }
  const value = object['value']
  if (value === undefined || value === null) return { error: '"value" is required and not null.' }
  const date = object['effective_date'] ?? null
  if (date !== null && (typeof date !== 'string' || !isCalendarDate(date))) {
    return { error: '"effective_date" is a calendar date YYYY-MM-DD, or null.' }
  }
  const qualifiers = object['qualifiers'] ?? {}
  if (qualifiers === null || typeof qualifiers !== 'object' || Array.isArray(qualifiers)) {
    return { error: '"qualifiers" is an object.' }
  }
  const badQualifier = Object.entries(qualifiers).find(
    ([, q]) => typeof q !== 'string' && typeof q !== 'number' && typeof q !== 'boolean',
  )
  if (badQualifier) return { error: `Qualifier "${badQualifier[0]}" is a string, a number or a boolean.` }
  return {
    answer: {
      value: value as Json,
      effective_date: date as string | null,
      qualifiers: qualifiers as Record<string, Json>,
    },
  }
}
