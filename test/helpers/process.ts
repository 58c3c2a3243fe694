import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * The production entry points: what `npm start` and `npm run arbiter` run, compiled by `npm run build` (which
 * `npm test` runs first). Process-level tests exercise exactly what ships.
 */
export function builtEntry(name: 'server' | 'cli'): string {
  const path = join(ROOT, 'dist', `${name}.js`)
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run build\` first (npm test does)`)
  return path
}

export interface ServiceProcess {
  child: ChildProcess
  baseUrl: string
  stdout: () => string
  stderr: () => string
  /** Waits until stdout matches `pattern` (or the process exits) and returns the match. */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>
  /** SIGTERM and wait; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts the built service as a real process (port 0) and waits until it logs where it listens. `nodeArgs` go
 * before the entry (a `--import` preload, say); `command` is the entry and its arguments (`dist/server.js`
 * unless given, e.g. the CLI's `serve`).
 */
export async function startService(
  env: Record<string, string>,
  timeoutMs = 60_000,
  nodeArgs: string[] = [],
  command: string[] = [builtEntry('server')],
): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [...nodeArgs, ...command], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout!.on('data', (chunk) => {
    out += chunk
  })
  child.stderr!.on('data', (chunk) => {
    err += chunk
  })
  const deadline = Date.now() + timeoutMs
  let baseUrl: string | undefined
  while (!baseUrl) {
    const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
    if (match) baseUrl = match[1]
    else if (child.exitCode !== null) throw new Error(`service exited ${child.exitCode}: ${err}${out}`)
    else if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`service did not start: ${err}${out}`)
    } else await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    child,
    baseUrl,
    stdout: () => out,
    stderr: () => err,
    async waitForStdout(pattern, waitMs = 30_000) {
      const until = Date.now() + waitMs
      for (;;) {
        const match = pattern.exec(out)
        if (match) return match
        if (child.exitCode !== null || Date.now() > until) {
          throw new Error(`stdout never matched ${pattern} (exit ${child.exitCode}): ${err}${out}`)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    async stop(signal = 'SIGTERM') {
      // Ended already (by a signal, exitCode stays null): no 'exit' is coming.
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
      child.kill(signal)
      const [code] = await once(child, 'exit')
      return code as number | null
    },
  }
}

/** Runs the built CLI to completion. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runBuilt('cli', args, env)
}

/** Runs a built entry point to completion (the service only stops by itself when it fails to start). */
export async function runBuilt(
  name: 'server' | 'cli',
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [builtEntry(name), ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => {
    stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  // 'close', not 'exit': a process can exit before its output has been read from the pipes, and a short run
  // (a usage error) then came back with empty stderr.
  const [code] = await once(child, 'close')
  return { code: code as number | null, stdout, stderr }
}

/**
 * How many child processes a test runs at once: one per core, at least 2, at most 4. Starting a dozen Node
 * processes together on a 2-core machine (shared with the other test files `npm test` runs) made each one wait
 * for CPU, and a per-process time limit then failed the test for the machine's load, not for Arbiter.
 */
export const PROCESS_CONCURRENCY = Math.max(2, Math.min(4, availableParallelism()))

/**
 * `fn` over every item, at most `limit` at a time, results in the items' order. For tests that start processes:
 * they queue here instead of all competing for the CPU at once.
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  fn: (item: T, index: number) => Promise<R>,
  limit = PROCESS_CONCURRENCY,
): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await fn(items[index]!, index)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}
