import { escapePointerToken } from '../domain/shared/json-pointer.ts'
import { AppError } from '../errors.ts'

/** Deeper documents are refused: recursion over them (validation, canonical JSON) could exhaust the stack. */
export const MAX_JSON_DEPTH = 64

function badString(value: string): string | null {
  if (value.includes('\u0000')) return 'contains U+0000, which cannot be stored'
  if (!value.isWellFormed()) return 'contains a lone surrogate, which RFC 8785 cannot canonicalize'
  return null
}

/**
 * Checks a parsed request body before anything else sees it, iteratively (no recursion): nesting depth, and
 * strings or keys that PostgreSQL or JCS would reject later (NUL, lone surrogates). Those become a clear 400
 * here instead of a database error after part of the work is done.
 */
export function assertAcceptableJson(root: unknown): void {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value: root, depth: 0, path: '' }]
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop()!
    if (typeof value === 'string') {
      const problem = badString(value)
      if (problem) throw invalid(path, `string ${problem}`)
      continue
    }
    if (value === null || typeof value !== 'object') continue
    if (depth >= MAX_JSON_DEPTH) throw invalid(path, `nested deeper than ${MAX_JSON_DEPTH} levels`)
    if (Array.isArray(value)) {
      value.forEach((item, index) => {
        stack.push({ value: item, depth: depth + 1, path: `${path}/${index}` })
      })
      continue
    }
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = badString(key)
      const childPath = `${path}/${escapePointerToken(key)}`
      if (keyProblem) throw invalid(path, `key ${keyProblem}`)
      stack.push({ value: item, depth: depth + 1, path: childPath })
    }
  }
}

function invalid(path: string, message: string): AppError {
  return new AppError('VALIDATION', `body${path}: ${message}`, {}, [{ path: `body${path}`, message }])
}
