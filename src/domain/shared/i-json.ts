import type { JsonValue } from './canonical-json.ts'
import { escapePointerToken } from './json-pointer.ts'

/*
 * Request bodies are I-JSON (RFC 7493), because what is hashed (RFC 8785) is what was parsed: a body that
 * JSON.parse would silently change — invalid UTF-8 replaced, a duplicate member name losing to the last one, an
 * integer past 2^53 rounded, 1e400 read as Infinity, 1e-400 as 0 — is refused instead, naming where.
 */

/** Deeper documents are refused: recursion over them (validation, canonical JSON) could exhaust the stack. */
export const MAX_JSON_DEPTH = 64

/** Integers of larger magnitude cannot all be told apart as doubles (2^53 + 1 reads as 2^53). */
const MAX_SAFE_MAGNITUDE = '9007199254740992'

/** Why a text that JSON.parse accepts is not acceptable: the JSON Pointer of the offending value, and why. */
export interface IJsonViolation {
  pointer: string
  message: string
}

/** A request body read as I-JSON: its text and value, or why it is refused (`pointer` null: the whole body). */
export type JsonBodyReading =
  | { ok: true; text: string; value: JsonValue }
  | { ok: false; reason: 'malformed-json' | 'not-i-json'; pointer: string | null; message: string }

/**
 * Reads a body's bytes as I-JSON: strict UTF-8 (invalid bytes are refused, not replaced), then JSON, then
 * `findIJsonViolation`.
 */
export function readJsonBody(bytes: Uint8Array): JsonBodyReading {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return { ok: false, reason: 'not-i-json', pointer: null, message: 'the body is not valid UTF-8' }
  }
  let value: JsonValue
  try {
    value = JSON.parse(text) as JsonValue
  } catch (err) {
    return {
      ok: false,
      reason: 'malformed-json',
      pointer: null,
      message: `the body is not valid JSON (${(err as Error).message})`,
    }
  }
  const violation = findIJsonViolation(text)
  if (violation) return { ok: false, reason: 'not-i-json', ...violation }
  return { ok: true, text, value }
}

/**
 * Why a text is not I-JSON, in words naming where (`duplicate member name "manifest" at the top level`), or null:
 * also for a text that is not JSON at all, which the caller tells apart by parsing it.
 */
export function describeIJsonViolation(text: string): string | null {
  try {
    JSON.parse(text)
  } catch {
    return null
  }
  const violation = findIJsonViolation(text)
  if (!violation) return null
  return `${violation.message} at ${violation.pointer === '' ? 'the top level' : violation.pointer}`
}

/** Strict UTF-8: a text with an invalid byte is refused (null), not repaired with U+FFFD. */
export function decodeUtf8Strictly(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return null
  }
}

interface Frame {
  isObject: boolean
  /** Array: the index of the element being read. */
  index: number
  /** Object: the name of the member whose value is being read. */
  key: string
  /** Object: true between `{` or `,` and the next member name. */
  expectKey: boolean
  /** Object: the names read so far; a list while short (most objects are small), a set beyond. */
  names: string[]
  manyNames: Set<string> | null
  /** Object: the value of a member named `constructor` (which may not hold `prototype`). */
  isConstructorValue: boolean
}

const FEW_NAMES = 16

/**
 * What ends a run of plain characters inside a string: its closing quote or an escape. Searched with a regex
 * from `lastIndex`, not `indexOf(…, position)`: in code V8 has optimized (Node 20), that call cost time growing
 * with the text, so a warm server checked a large body far slower than a cold one.
 */
const STRING_STOP = /["\\]/g

/** Adds `name` to the frame's names; false when it was already there. */
function addName(frame: Frame, name: string): boolean {
  if (frame.manyNames) {
    if (frame.manyNames.has(name)) return false
    frame.manyNames.add(name)
    return true
  }
  if (frame.names.includes(name)) return false
  frame.names.push(name)
  if (frame.names.length > FEW_NAMES) frame.manyNames = new Set(frame.names)
  return true
}

/**
 * One pass over a text that JSON.parse accepts, finding the first value that is not I-JSON or that the rest of
 * Arbiter cannot take: a duplicate member name (at any depth), an integer literal of magnitude above 2^53, a
 * nonzero number that reads as 0 or ±Infinity, a string or member name holding U+0000 (PostgreSQL refuses it)
 * or a lone surrogate (RFC 8785 refuses it), nesting deeper than MAX_JSON_DEPTH, and the member names that
 * pollute prototypes (`__proto__`, `constructor.prototype`). Returns null when there is none.
 */
export function findIJsonViolation(text: string): IJsonViolation | null {
  // Frames are reused by depth: a body of many small objects allocates none per object.
  const frames: Frame[] = []
  let depth = 0
  // Raw lone surrogates exist only in texts built in JavaScript (never in decoded bytes); then every string is
  // decoded and checked, otherwise its escapes alone tell.
  const rawSurrogates = !text.isWellFormed()
  const length = text.length
  const string: StringScan = { end: 0, hasEscape: false, problem: null }
  let i = 0
  while (i < length) {
    const c = text.charCodeAt(i)
    if (c === 0x22 /* " */) {
      scanString(text, i, rawSurrogates, string)
      const top = depth > 0 ? frames[depth - 1]! : undefined
      if (top?.isObject && top.expectKey) {
        const violation = readMemberName(text, i, string, frames, depth)
        if (violation) return violation
      } else if (string.problem) {
        return { pointer: pointerTo(frames, depth), message: `string ${string.problem}` }
      }
      i = string.end + 1
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39) /* 0-9 */) {
      let j = i + 1
      while (j < length && isNumberChar(text.charCodeAt(j))) j++
      // Short integers (nearly all numbers) need no closer look.
      if (j - i > 15 || !isShortInteger(text, i, j)) {
        const problem = numberProblem(text.slice(i, j))
        if (problem) return { pointer: pointerTo(frames, depth), message: problem }
      }
      i = j
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (depth >= MAX_JSON_DEPTH) {
        return { pointer: pointerTo(frames, depth), message: `nested deeper than ${MAX_JSON_DEPTH} levels` }
      }
      openFrame(frames, depth, c === 0x7b)
      depth++
      i++
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--
      i++
    } else if (c === 0x2c /* , */) {
      const top = frames[depth - 1]!
      if (top.isObject) top.expectKey = true
      else top.index++
      i++
    } else {
      // Whitespace, `:`, and the letters of true, false and null.
      i++
    }
  }
  return null
}

/** The pointer to the value being read in the `upTo` outermost containers (their current member or element). */
function pointerTo(frames: readonly Frame[], upTo: number): string {
  let pointer = ''
  for (let k = 0; k < upTo; k++) {
    const frame = frames[k]!
    pointer += `/${frame.isObject ? escapePointerToken(frame.key) : frame.index}`
  }
  return pointer
}

/** The container opened at `depth` (an object or an array), in the frame kept for that depth. */
function openFrame(frames: Frame[], depth: number, isObject: boolean): void {
  const parent = depth > 0 ? frames[depth - 1]! : undefined
  let frame = frames[depth]
  if (!frame) {
    frame = {
      isObject,
      index: 0,
      key: '',
      expectKey: false,
      names: [],
      manyNames: null,
      isConstructorValue: false,
    }
    frames.push(frame)
  }
  frame.isObject = isObject
  frame.index = 0
  frame.key = ''
  frame.expectKey = isObject
  frame.names.length = 0
  frame.manyNames = null
  frame.isConstructorValue = isObject && parent?.isObject === true && parent.key === 'constructor'
}

/** What `scanString` found of one string; one object per check, filled again for each string. */
interface StringScan {
  /** The index of its closing quote. */
  end: number
  hasEscape: boolean
  /** Why it cannot be taken (U+0000, a lone surrogate), or null. */
  problem: string | null
}

/** Reads the string whose opening quote is at `start`: jumps from escape to escape to its closing quote. */
function scanString(text: string, start: number, rawSurrogates: boolean, scan: StringScan): void {
  const length = text.length
  let loneEscape = false
  scan.hasEscape = false
  scan.problem = null
  let j = start + 1
  for (;;) {
    STRING_STOP.lastIndex = j
    // JSON.parse accepted the text, so every string ends.
    const stop = STRING_STOP.test(text) ? STRING_STOP.lastIndex - 1 : length
    if (stop === length || text.charCodeAt(stop) === 0x22 /* " */) {
      scan.end = stop
      break
    }
    // An escape.
    scan.hasEscape = true
    if (text.charCodeAt(stop + 1) !== 0x75 /* u */) {
      j = stop + 2
      continue
    }
    const code = Number.parseInt(text.slice(stop + 2, stop + 6), 16)
    j = stop + 6
    if (code === 0) scan.problem ??= 'contains U+0000, which cannot be stored'
    else if (code >= 0xdc00 && code <= 0xdfff) loneEscape = true
    else if (code >= 0xd800 && code <= 0xdbff) {
      const low =
        text.charCodeAt(j) === 0x5c && text.charCodeAt(j + 1) === 0x75
          ? Number.parseInt(text.slice(j + 2, j + 6), 16)
          : -1
      if (low >= 0xdc00 && low <= 0xdfff) j += 6
      else loneEscape = true
    }
  }
  // An escaped half may pair with a raw one, so with raw surrogates around only the decoded string tells.
  const lone = rawSurrogates
    ? !(JSON.parse(text.slice(start, scan.end + 1)) as string).isWellFormed()
    : loneEscape
  if (lone) scan.problem ??= LONE_SURROGATE
}

/**
 * The member name scanned (`string`, opening quote at `start`) of the object open at `depth`: kept as the name of
 * the member whose value follows, or why it is refused (its characters, a duplicate, a polluting name).
 */
function readMemberName(
  text: string,
  start: number,
  string: StringScan,
  frames: readonly Frame[],
  depth: number,
): IJsonViolation | null {
  const top = frames[depth - 1]!
  if (string.problem)
    return { pointer: pointerTo(frames, depth - 1), message: `a member name ${string.problem}` }
  const name = string.hasEscape
    ? (JSON.parse(text.slice(start, string.end + 1)) as string)
    : text.slice(start + 1, string.end)
  if (!addName(top, name)) {
    return {
      pointer: `${pointerTo(frames, depth - 1)}/${escapePointerToken(name)}`,
      message: `duplicate member name ${JSON.stringify(name)}`,
    }
  }
  if (name === '__proto__' || (top.isConstructorValue && name === 'prototype')) {
    return {
      pointer: `${pointerTo(frames, depth - 1)}/${escapePointerToken(name)}`,
      message: `member name ${JSON.stringify(name)} is not allowed`,
    }
  }
  top.key = name
  top.expectKey = false
  return null
}

/** No `.`, `e` or `E` in text[from, to): an integer literal of at most 15 digits, always exact. */
function isShortInteger(text: string, from: number, to: number): boolean {
  for (let k = from; k < to; k++) {
    const c = text.charCodeAt(k)
    if (c === 0x2e || c === 0x65 || c === 0x45) return false
  }
  return true
}

const LONE_SURROGATE = 'contains a lone surrogate, which RFC 8785 cannot canonicalize'

function isNumberChar(c: number): boolean {
  // 0-9 . e E + -
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d
}

/** Why a JSON number literal is not I-JSON, or null. */
export function numberProblem(literal: string): string | null {
  const negative = literal.charCodeAt(0) === 0x2d
  let fractionOrExponent = -1
  for (let k = 0; k < literal.length; k++) {
    const c = literal.charCodeAt(k)
    if (c === 0x2e || c === 0x65 || c === 0x45) {
      fractionOrExponent = k
      break
    }
  }
  const shown = literal.length > 40 ? `${literal.slice(0, 40)}…` : literal
  if (fractionOrExponent === -1) {
    // An integer literal: JSON allows no leading zeros, so its digit count orders it.
    const digits = negative ? literal.slice(1) : literal
    if (digits.length < MAX_SAFE_MAGNITUDE.length) return null
    if (digits.length === MAX_SAFE_MAGNITUDE.length && digits <= MAX_SAFE_MAGNITUDE) return null
    return `integer ${shown} is beyond ±2^53 and would not be read exactly (I-JSON, RFC 7493)`
  }
  const value = Number(literal)
  if (!Number.isFinite(value)) return `number ${shown} overflows a double (I-JSON, RFC 7493)`
  const exponent = literal.search(/[eE]/)
  const mantissa = exponent === -1 ? literal : literal.slice(0, exponent)
  if (value === 0 && /[1-9]/.test(mantissa)) {
    return `number ${shown} underflows a double: it would be read as 0 (I-JSON, RFC 7493)`
  }
  return null
}
