import type { Json, Position } from '../shapes.ts'

/** A compact one-line reading of a JSON value: strings bare, everything else as JSON. */
export function valueText(value: Json | undefined): string {
  if (value === undefined) return 'absent'
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** "60000 USD… · from 2025-01-22 · applies_to=new_logos": a position on one line. */
export function positionText(position: Position): string {
  const parts = [valueText(position.value)]
  if (position.effective_date) parts.push(`from ${position.effective_date}`)
  const qualifiers = Object.entries(position.qualifiers ?? {})
  if (qualifiers.length > 0) parts.push(qualifiers.map(([k, v]) => `${k}=${valueText(v)}`).join(', '))
  return parts.join(' · ')
}
