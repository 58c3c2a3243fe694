import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { loadavg } from 'node:os'
import { type LatencySummary, summarize } from './load.ts'

/**
 * The CLI's commands as a user runs them: `node dist/cli.js …` (what `npx arbiter` runs), each run several times in
 * a row on an existing data dir, like hyperfine does. Per command: wall time of each run, and the CPU (user +
 * system) and peak memory of the process, from GNU time when the machine has it (/usr/bin/time). Target: every
 * command under 2 s.
 */
export const CLI_TARGET_MS = 2000

export interface CliTiming {
  command: string
  runs: number
  wallMs: LatencySummary
  /** Median CPU (user + system) of a run, ms; null without /usr/bin/time. */
  cpuMs: number | null
  /** Largest peak RSS of a run, bytes; null without /usr/bin/time. */
  peakRssBytes: number | null
  /** Exit codes other than 0 (a command that failed is timed, and listed here). */
  failures: number[]
  /** The machine's 1-minute load average before the first run. */
  loadAverage: number
}

const GNU_TIME = '/usr/bin/time'

export function timeCliCommands(options: {
  root: string
  env: Record<string, string>
  /** What the report calls each command, and its arguments. */
  commands: { name: string; args: string[] }[]
  runs: number
}): CliTiming[] {
  const timed = existsSync(GNU_TIME)
  return options.commands.map(({ name, args }) => {
    const loadAverage = loadavg()[0]!
    const walls: number[] = []
    const cpus: number[] = []
    let peakRssBytes: number | null = null
    const failures: number[] = []
    for (let run = 0; run < options.runs; run++) {
      const node = [process.execPath, 'dist/cli.js', ...args]
      const [file, ...argv] = timed ? [GNU_TIME, '-f', 'cli-time %U %S %M', ...node] : node
      const started = performance.now()
      const result = spawnSync(file!, argv, { cwd: options.root, env: options.env, encoding: 'utf8' })
      walls.push(performance.now() - started)
      if (result.status !== 0) failures.push(result.status ?? -1)
      const line = /cli-time ([\d.]+) ([\d.]+) (\d+)/.exec(result.stderr ?? '')
      if (line) {
        cpus.push((Number(line[1]) + Number(line[2])) * 1000)
        peakRssBytes = Math.max(peakRssBytes ?? 0, Number(line[3]) * 1024)
      }
    }
    cpus.sort((a, b) => a - b)
    return {
      command: name,
      runs: options.runs,
      wallMs: summarize(walls),
      cpuMs: cpus.length > 0 ? cpus[Math.floor(cpus.length / 2)]! : null,
      peakRssBytes,
      failures,
      loadAverage,
    }
  })
}

export function printCliTimings(timings: readonly CliTiming[]): void {
  for (const t of timings) {
    const verdict = t.wallMs.p50 < CLI_TARGET_MS && t.failures.length === 0 ? 'PASS' : 'MISS'
    process.stdout.write(
      `  cli ${t.command.padEnd(14)} wall p50 ${t.wallMs.p50.toFixed(0)} ms, max ${t.wallMs.max.toFixed(0)} ms over ${t.runs} runs` +
        `${t.cpuMs === null ? '' : `; CPU ${t.cpuMs.toFixed(0)} ms`}` +
        `${t.peakRssBytes === null ? '' : `, peak ${(t.peakRssBytes / 1024 / 1024).toFixed(0)} MB`}` +
        `; load ${t.loadAverage.toFixed(1)}${t.failures.length > 0 ? `; exit codes ${t.failures.join(',')}` : ''}` +
        ` (target < ${CLI_TARGET_MS} ms) ${verdict}\n`,
    )
  }
}
