import type { FastifyBaseLogger } from 'fastify'
import { type Bindings, type ChildLoggerOptions, levels } from 'pino'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * A request's logger, made only when something is logged: fastify asks for a child logger for every request,
 * and pino's child writes (and redacts) its bindings when it is made: work and allocation on every request, mostly
 * for requests that never log anything at the configured level (bench/README.md, "Figures behind the code"). A
 * line below the level is dropped without the child; the first line that is written makes it, and
 * every later call goes to it, so what is written is what the child writes. The request's own one line at its
 * end (`writeLine`) goes through the parent with the bindings in front, the same JSON without the child.
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
    if (this.#child !== undefined) this.#child[level](object, message)
    else this.parent[level]({ ...this.bindings, ...object }, message)
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
