import type { FastifyBaseLogger } from 'fastify'
import { type Bindings, type ChildLoggerOptions, levels, symbols } from 'pino'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * A request's logger, made only when something is logged: fastify asks for a child logger for every request,
 * and pino's child writes (and redacts) its bindings when it is made: work and allocation on every request, mostly
 * for requests that never log anything at the configured level (bench/README.md, "Figures behind the code"). A
 * line below the level is dropped without the child; the first line that is written makes it, and
 * every later call goes to it, so what is written is what the child writes. The request's own one line at its
 * end (`writeLine`) goes through the parent with the bindings in front, the same JSON without the child; when
 * redaction can change nothing in it, through the parent's unredacted twin (`plainLineWriter`).
 */
export class RequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined

  /** `parent.child(bindings)` is what it stands for: a route with child options of its own gets a real child. */
  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
  ) {}

  get level(): string {
    return this.#child?.level ?? this.parent.level
  }

  set level(level: string) {
    this.real().level = level
  }

  /** `logger[level](object, message)` with the request's bindings, without making the child for it. */
  writeLine(level: Level, object: Record<string, unknown>, message: string): void {
    if (this.#child !== undefined) {
      this.#child[level](object, message)
      return
    }
    const line = { ...this.bindings, ...object }
    plainLineWriter(this.parent, line)[level](line, message)
  }

  fatal(...args: unknown[]): void {
    this.at('fatal', args)
  }
  error(...args: unknown[]): void {
    this.at('error', args)
  }
  warn(...args: unknown[]): void {
    this.at('warn', args)
  }
  info(...args: unknown[]): void {
    this.at('info', args)
  }
  debug(...args: unknown[]): void {
    this.at('debug', args)
  }
  trace(...args: unknown[]): void {
    this.at('trace', args)
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options)
  }

  private at(level: Level, args: unknown[]): void {
    if (this.#child === undefined && !logsAt(this, level)) return
    ;(this.real()[level] as (...a: unknown[]) => void)(...args)
  }

  private real(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings)
    return this.#child
  }
}

/**
 * Whether `logger` writes lines at `level` (true when its level is a custom one: the logger decides). A request's
 * logger answers with its child's level once it has one, its parent's before.
 */
export function logsAt(logger: FastifyBaseLogger, level: Level): boolean {
  const threshold = levels.values[logger.level]
  return threshold === undefined || levels.values[level]! >= threshold
}

/** What redaction a parent logger does, read once per parent (the app has one). */
interface Redaction {
  /** Top-level names a redact path starts with (`key`, `req` for `req.headers.authorization`, …). */
  names: ReadonlySet<string>
  /** The parent without redaction: set when it has a wildcard path (`*.key`) to skip. */
  unredacted: FastifyBaseLogger | undefined
}

const redactions = new WeakMap<FastifyBaseLogger, Redaction>()

/**
 * The logger to write `line` with: the parent, or its unredacted twin when redaction cannot change the line — no
 * value of it an object (nothing to look into) and no name of it one a redact path starts with. A wildcard path
 * (`*.key`, the service's) makes pino run its redactor on every value of every line, strings and numbers
 * included, where it finds nothing: the request's own line is plain values only, one per request (bench/README.md,
 * "Figures behind the code").
 */
function plainLineWriter(parent: FastifyBaseLogger, line: Record<string, unknown>): FastifyBaseLogger {
  const { names, unredacted } = redactionOf(parent)
  if (unredacted === undefined) return parent
  for (const name in line) {
    const value = line[name]
    if ((typeof value === 'object' && value !== null) || typeof value === 'function' || names.has(name))
      return parent
  }
  // The twin was made at the parent's level then; the parent's may have changed since.
  if (unredacted.level !== parent.level) unredacted.level = parent.level
  return unredacted
}

function redactionOf(parent: FastifyBaseLogger): Redaction {
  let redaction = redactions.get(parent)
  if (redaction === undefined) {
    // pino keeps a redacting stringifier per top-level name of its paths, and one for wildcard paths.
    const stringifiers = (parent as unknown as Record<symbol, object | undefined>)[symbols.stringifiersSym]
    const wildcard = stringifiers !== undefined && symbols.wildcardFirstSym in stringifiers
    redaction = {
      names: new Set(stringifiers === undefined ? [] : Object.keys(stringifiers)),
      unredacted: wildcard ? parent.child({}, { redact: [] }) : undefined,
    }
    redactions.set(parent, redaction)
  }
  return redaction
}
