import canonicalize from 'canonicalize'

/** Any value that survives a JSON round trip. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** Raised for values RFC 8785 cannot represent: NaN, ±Infinity, lone surrogates, cycles. */
export class CanonicalJsonError extends Error {
  override name = 'CanonicalJsonError'
}

/**
 * Canonical texts already known for objects and arrays, so that a value is canonicalized once: a server can
 * canonicalize a large request body's parts in worker threads and remember them on the parsed body, and an item
 * hashed on its own is not canonicalized again inside a digest of the whole. A memo, not state: a node's canonical
 * text never depends on when it is asked for, as long as the node is not changed after it is remembered, which is
 * why only values nothing modifies may be remembered.
 */
const knownTexts = new WeakMap<object, string>()

/** Remembers `text` as the canonical JSON of `node`, which must not be changed afterwards. */
export function rememberCanonicalJson(node: object, text: string): void {
  knownTexts.set(node, text)
}

// Beyond this depth the plain serializer hands over to the general one, which detects cycles.
const PLAIN_MAX_DEPTH = 512

/**
 * RFC 8785 of plain JSON data (plain objects and arrays, strings, finite numbers, booleans, null; members that are
 * undefined skipped, undefined array elements written as null, as JSON.stringify does), or `undefined` when the
 * value holds anything else (a Date, a class instance, a function, a symbol, a bigint, a cycle) and the general
 * serializer must decide. Throws CanonicalJsonError for NaN, ±Infinity and lone surrogates.
 */
function plainCanonical(value: unknown, depth: number): string | undefined {
  if (value === null || value === undefined) return 'null'
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw new CanonicalJsonError('Lone surrogate is not allowed')
      return JSON.stringify(value)
    case 'number':
      if (!Number.isFinite(value)) throw new CanonicalJsonError(`${value} is not allowed`)
      return JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object': {
      const known = knownTexts.get(value)
      if (known !== undefined) return known
      if (depth >= PLAIN_MAX_DEPTH) return undefined
      if (Array.isArray(value)) {
        let text = '['
        for (let i = 0; i < value.length; i++) {
          const item = plainCanonical(value[i], depth + 1)
          if (item === undefined) return undefined
          text += (i === 0 ? '' : ',') + item
        }
        return `${text}]`
      }
      const prototype = Object.getPrototypeOf(value)
      if (prototype !== Object.prototype && prototype !== null) return undefined
      let text = '{'
      let first = true
      for (const key of sortedKeys(value)) {
        const member = (value as Record<string, unknown>)[key]
        if (member === undefined) continue
        if (typeof member === 'function' || typeof member === 'symbol') return undefined
        const memberText = plainCanonical(member, depth + 1)
        if (memberText === undefined) return undefined
        text += `${first ? '' : ','}${quotedKey(key)}:${memberText}`
        first = false
      }
      return `${text}}`
    }
    default:
      return undefined
  }
}

// Up to this many keys an object's are sorted by insertion sort, in place: V8's sort copies the array first, and
// this runs for every object of every value hashed.
const INSERTION_SORT_MAX = 16

/** An object's own keys in RFC 8785 order: by UTF-16 code units, as `<` and the default sort compare strings. */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value)
  if (keys.length > INSERTION_SORT_MAX) return keys.sort()
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!
    let j = i - 1
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!
      j -= 1
    }
    keys[j + 1] = key
  }
  return keys
}

// Member names as JSON strings, for the names values are made of again and again (a record's, a manifest's).
// Bounded: names from requests are arbitrary, so only the first few thousand short ones are kept.
const quotedKeys = new Map<string, string>()
const QUOTED_KEYS_MAX = 4096
const QUOTED_KEY_MAX_LENGTH = 64

function quotedKey(key: string): string {
  const known = quotedKeys.get(key)
  if (known !== undefined) return known
  if (!key.isWellFormed()) throw new CanonicalJsonError('Lone surrogate is not allowed')
  const quoted = JSON.stringify(key)
  if (quotedKeys.size < QUOTED_KEYS_MAX && key.length <= QUOTED_KEY_MAX_LENGTH) quotedKeys.set(key, quoted)
  return quoted
}

/** RFC 8785 (JCS) serialization. Throws CanonicalJsonError for values JCS forbids. */
export function canonicalJson(value: unknown): string {
  // Plain data (almost every value hashed) takes the fast path; anything else the general serializer.
  const plain = value === undefined ? undefined : plainCanonical(value, 0)
  if (plain !== undefined) return plain
  let text: string | undefined
  try {
    text = canonicalize(value)
  } catch (err) {
    throw new CanonicalJsonError((err as Error).message)
  }
  if (text === undefined) throw new CanonicalJsonError('value has no JSON representation')
  return text
}

/**
 * RFC 8785 for values that came out of JSON.parse (plain objects, arrays, strings, finite numbers, booleans,
 * null). Equal to `canonicalJson` on every such value (a property test holds it to that); the audit log
 * canonicalizes every record with it, twice per record when verifying.
 */
export function canonicalJsonValue(value: JsonValue): string {
  const text = plainCanonical(value, 0)
  if (text === undefined) throw new CanonicalJsonError('value is not plain JSON')
  return text
}

/** One large part of a JSON value and its canonical text; `path` leads from the root to it. */
export interface CanonicalPart {
  path: (string | number)[]
  text: string
}

/**
 * Canonicalizes a parsed JSON value (depth-bounded, as request bodies are) and returns the canonical text of
 * its large parts: the objects and arrays whose text is at least `minLength` long and that hold no such object
 * or array. The parts are disjoint, so together they are never longer than the whole; remembered on another
 * copy of the same value (`rememberCanonicalParts`), they leave only the small rest to canonicalize there.
 */
export function canonicalParts(value: JsonValue, minLength: number): CanonicalPart[] {
  const parts: CanonicalPart[] = []
  const path: (string | number)[] = []
  // Returns the node's text and whether it is, or holds, a large object or array (only those can be remembered).
  const visit = (node: JsonValue): { text: string; large: boolean } => {
    if (node === null || typeof node !== 'object') return { text: canonicalJsonValue(node), large: false }
    let text: string
    let childLarge = false
    if (Array.isArray(node)) {
      text = '['
      for (let i = 0; i < node.length; i++) {
        path.push(i)
        const child = visit(node[i]!)
        path.pop()
        childLarge ||= child.large
        text += (i === 0 ? '' : ',') + child.text
      }
      text += ']'
    } else {
      text = '{'
      let first = true
      for (const key of Object.keys(node).sort()) {
        path.push(key)
        const child = visit(node[key]!)
        path.pop()
        childLarge ||= child.large
        text += `${first ? '' : ','}${canonicalJsonValue(key)}:${child.text}`
        first = false
      }
      text += '}'
    }
    if (!childLarge && text.length >= minLength) parts.push({ path: [...path], text })
    return { text, large: childLarge || text.length >= minLength }
  }
  visit(value)
  return parts
}

/** Remembers each part's text for the node at its path in `value` (a copy of the value the parts came from). */
export function rememberCanonicalParts(value: JsonValue, parts: readonly CanonicalPart[]): void {
  for (const part of parts) {
    let node: unknown = value
    for (const token of part.path) node = (node as Record<string | number, unknown>)[token]
    if (node !== null && typeof node === 'object') rememberCanonicalJson(node, part.text)
  }
}
