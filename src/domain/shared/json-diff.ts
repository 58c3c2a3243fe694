import type { JsonValue } from './canonical-json.ts'
import { toJsonPointer } from './json-pointer.ts'
import { compareCodeUnits } from './order.ts'

/**
 * One point where two JSON documents differ. `a` / `b` hold the value at `pointer` on each side; where the path
 * exists on one side only, the other side's key is absent (not `undefined`, absent), so the entry serializes
 * without it.
 */
export interface JsonDifference {
  pointer: string
  a?: JsonValue
  b?: JsonValue
}

type JsonObject = { [key: string]: JsonValue }

function isJsonObject(value: JsonValue): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Structural equality of two JSON values: objects ignore key order, arrays do not.
 * Numbers compare with `===`, so `0` equals `-0`, matching JCS which writes both as `0`
 * (two documents with the same hash are therefore always equal here).
 */
export function jsonEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, index) => jsonEqual(item, b[index]!))
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false
    const keys = Object.keys(a)
    if (keys.length !== Object.keys(b).length) return false
    return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key]!, b[key]!))
  }
  return false
}

function collectDifferences(a: JsonValue, b: JsonValue, path: string[], out: JsonDifference[]): void {
  if (Array.isArray(a) && Array.isArray(b)) {
    const length = Math.max(a.length, b.length)
    for (let index = 0; index < length; index++) {
      collectChild(a, b, index, String(index), path, out)
    }
    return
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)])
    for (const key of keys) collectChild(a, b, key, key, path, out)
    return
  }
  // Leaves, and containers of different types (array vs object, number vs string, …):
  // the difference is reported at this point, whole values on both sides.
  if (!jsonEqual(a, b)) out.push({ pointer: toJsonPointer(path), a, b })
}

function collectChild(
  a: JsonValue[] | JsonObject,
  b: JsonValue[] | JsonObject,
  key: number | string,
  token: string,
  path: string[],
  out: JsonDifference[],
): void {
  // `Object.hasOwn` rather than `in`: a key named `__proto__` or `constructor` is data here.
  const inA = Object.hasOwn(a, key)
  const inB = Object.hasOwn(b, key)
  const childPath = [...path, token]
  const valueA = (a as Record<string | number, JsonValue>)[key]!
  const valueB = (b as Record<string | number, JsonValue>)[key]!
  if (inA && inB) {
    collectDifferences(valueA, valueB, childPath, out)
  } else if (inA) {
    out.push({ pointer: toJsonPointer(childPath), a: valueA })
  } else {
    out.push({ pointer: toJsonPointer(childPath), b: valueB })
  }
}

/**
 * Every point where `a` and `b` differ, as RFC 6901 pointers sorted by UTF-16 code units. Objects are compared
 * key by key over the union of keys, arrays element by element by index; a difference is reported at the
 * deepest point where both sides still have the same container type, so no pointer is a prefix of another and
 * pointers are unique. Equal documents give `[]`.
 */
export function diffJson(a: JsonValue, b: JsonValue): JsonDifference[] {
  const out: JsonDifference[] = []
  collectDifferences(a, b, [], out)
  return out.sort((x, y) => compareCodeUnits(x.pointer, y.pointer))
}
