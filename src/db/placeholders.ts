/**
 * `text` with every `$n` parameter placeholder moved up by `offset`, read as PostgreSQL's lexer reads it: a `$1`
 * inside a string constant ('…', E'…', $tag$…$tag$), a quoted identifier ("…"), a comment (-- …, /* … *\/) or an
 * identifier (`a$1`) is no placeholder and stays as it is.
 */
export function shiftPlaceholders(text: string, offset: number): string {
  if (offset === 0) return text
  let out = ''
  let copiedUpTo = 0
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === "'") {
      i = endOfQuoted(text, i, "'", isEscapeStringStart(text, i))
    } else if (c === '"') {
      i = endOfQuoted(text, i, '"', false)
    } else if (c === '-' && text[i + 1] === '-') {
      const eol = text.indexOf('\n', i)
      i = eol === -1 ? text.length : eol + 1
    } else if (c === '/' && text[i + 1] === '*') {
      i = endOfBlockComment(text, i)
    } else if (isIdentifierChar(c)) {
      i = endOfIdentifier(text, i)
    } else if (c === '$') {
      const digits = /^\d+/.exec(text.slice(i + 1, i + 12))
      if (digits) {
        out += `${text.slice(copiedUpTo, i)}$${Number(digits[0]) + offset}`
        i += 1 + digits[0].length
        copiedUpTo = i
      } else {
        i = endOfDollarQuoted(text, i)
      }
    } else {
      i += 1
    }
  }
  return out + text.slice(copiedUpTo)
}

function isIdentifierChar(c: string): boolean {
  return /[A-Za-z0-9_]/.test(c) || c.charCodeAt(0) > 0x7f
}

/** An identifier or keyword (or a number), with the `$` signs an identifier may hold after its first letter. */
function endOfIdentifier(text: string, start: number): number {
  let i = start + 1
  while (i < text.length && (isIdentifierChar(text[i]!) || text[i] === '$')) i += 1
  return i
}

/** A quote right after a lone E (`E'…'`) opens a string in which a backslash escapes the next character. */
function isEscapeStringStart(text: string, quote: number): boolean {
  const before = text[quote - 1]
  return (before === 'E' || before === 'e') && (quote < 2 || !isIdentifierChar(text[quote - 2]!))
}

/** The index after the closing `quote` (doubled, it stands for itself), or the end of the text. */
function endOfQuoted(text: string, start: number, quote: string, backslashEscapes: boolean): number {
  let i = start + 1
  while (i < text.length) {
    const c = text[i]!
    if (backslashEscapes && c === '\\') i += 2
    else if (c === quote && text[i + 1] === quote) i += 2
    else if (c === quote) return i + 1
    else i += 1
  }
  return text.length
}

/** Block comments nest in PostgreSQL. */
function endOfBlockComment(text: string, start: number): number {
  let depth = 0
  let i = start
  while (i < text.length) {
    if (text[i] === '/' && text[i + 1] === '*') {
      depth += 1
      i += 2
    } else if (text[i] === '*' && text[i + 1] === '/') {
      depth -= 1
      i += 2
      if (depth === 0) return i
    } else {
      i += 1
    }
  }
  return text.length
}

/** `$tag$ … $tag$` (the tag may be empty); a `$` that opens no such string is passed over. */
function endOfDollarQuoted(text: string, start: number): number {
  const opening = /^\$([A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/.exec(text.slice(start))
  if (!opening) return start + 1
  const close = text.indexOf(opening[0], start + opening[0].length)
  return close === -1 ? text.length : close + opening[0].length
}
