import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, fstatSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { request } from 'undici'
import { withClient } from './database.ts'

/** Child processes the benchmark starts (Arbiter, the baseline server): output kept for errors, stopped on exit. */

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port)
        else reject(new Error('could not pick a free port'))
      })
    })
  })
}

export interface ManagedProcess {
  name: string
  pid: number
  origin: string
  /** The last lines the process wrote (stdout and stderr), for error messages. */
  logTail(): string
  /** SIGTERM (graceful shutdown), then SIGKILL after `graceMs`. Safe to call twice. */
  stop(graceMs?: number): Promise<void>
}

export function startProcess(options: {
  name: string
  args: string[]
  env: Record<string, string>
  cwd: string
  port: number
  /** Where stdout goes (a file, appended to; its log lines, say) instead of to this process. */
  stdoutFile?: string | undefined
}): ManagedProcess {
  const stdoutFd = options.stdoutFile === undefined ? undefined : openSync(options.stdoutFile, 'a')
  let child: ChildProcess
  try {
    child = spawn(process.execPath, options.args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', stdoutFd ?? 'pipe', 'pipe'],
    })
  } finally {
    // The child holds its own copy.
    if (stdoutFd !== undefined) closeSync(stdoutFd)
  }
  if (child.pid === undefined) throw new Error(`${options.name}: could not start`)
  const lines: string[] = []
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
    if (lines.length > 200) lines.splice(0, lines.length - 200)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let exited = false
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = true
      lines.push(`[${options.name} exited: code ${code}, signal ${signal}]`)
      resolve()
    })
  })
  return {
    name: options.name,
    pid: child.pid,
    origin: `http://127.0.0.1:${options.port}`,
    logTail: () => [...fileTail(options.stdoutFile), ...lines.slice(-30)].join('\n'),
    async stop(graceMs = 10_000) {
      if (exited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exit
      clearTimeout(timer)
    },
  }
}

/** The last lines of a process's stdout file, if it writes to one. */
function fileTail(path: string | undefined): string[] {
  if (path === undefined) return []
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    const size = fstatSync(fd).size
    const tail = Buffer.alloc(Math.min(size, 8192))
    readSync(fd, tail, 0, tail.length, size - tail.length)
    return tail.toString('utf8').split('\n').filter(Boolean).slice(-10)
  } catch {
    return []
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** Polls `path` until it answers 200; fails early when the process dies. */
export async function waitReady(proc: ManagedProcess, path: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (!processAlive(proc.pid)) throw new Error(`${proc.name} exited during start-up:\n${proc.logTail()}`)
    try {
      const res = await request(`${proc.origin}${path}`, { headersTimeout: 2000, bodyTimeout: 2000 })
      await res.body.dump()
      if (res.statusCode === 200) return
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`${proc.name} not ready after ${timeoutMs} ms:\n${proc.logTail()}`)
    await sleep(100)
  }
}

function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 3 is the state; Z is a zombie (exited, not yet reaped).
    return stat.split(') ')[1]?.[0] !== 'Z'
  } catch {
    return false
  }
}

/**
 * Resident memory of one process: VmRSS polled every 200 ms (remembering during which phase the peak came) and
 * the kernel's own high-water mark VmHWM, read last just before the process is stopped. The high-water mark is
 * the process's since it started unless it is reset: each new phase resets it (`/proc/<pid>/clear_refs`, Linux),
 * so that a spike between two polls counts in the phase it came in, and a phase's peak is not its predecessors'.
 */
export class MemorySampler {
  private currentPhase = 'start-up'
  peakRssBytes = 0
  /** The highest VmHWM read: the process's peak (each phase's mark is read before it is reset). */
  hwmBytes = 0
  samples = 0
  /**
   * Highest RSS per phase label: polled, and the high-water mark of the phase while the mark is reset at each
   * phase (`hwmByPhase`); polled only otherwise (the mark would then carry an earlier phase's peak).
   */
  readonly phasePeaks = new Map<string, number>()
  /** Whether every phase so far started with its own high-water mark. */
  hwmByPhase = true
  /** Highest V8 heap figures per phase, from the server's own /metrics (Arbiter only). */
  readonly heapPeaks = new Map<string, { heapTotal: number; heapUsed: number; external: number }>()
  private timer: NodeJS.Timeout | undefined
  private heapTimer: NodeJS.Timeout | undefined

  constructor(
    readonly pid: number,
    private readonly metricsUrl?: string,
  ) {}

  start(intervalMs = 200): void {
    this.sample()
    this.timer = setInterval(() => this.sample(), intervalMs)
    this.timer.unref()
    if (this.metricsUrl) {
      // Once a second: enough to tell heap growth from native memory, too rare to load the server.
      this.heapTimer = setInterval(() => void this.sampleHeap(), 1000)
      this.heapTimer.unref()
    }
  }

  private async sampleHeap(): Promise<void> {
    const phase = this.phase
    let text: string
    try {
      const res = await request(this.metricsUrl!, { headersTimeout: 2000, bodyTimeout: 2000 })
      text = await res.body.text()
    } catch {
      return
    }
    const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN)
    const now = {
      heapTotal: metric('nodejs_heap_size_total_bytes'),
      heapUsed: metric('nodejs_heap_size_used_bytes'),
      external: metric('nodejs_external_memory_bytes'),
    }
    const peak = this.heapPeaks.get(phase) ?? { heapTotal: 0, heapUsed: 0, external: 0 }
    this.heapPeaks.set(phase, {
      heapTotal: Math.max(peak.heapTotal, now.heapTotal || 0),
      heapUsed: Math.max(peak.heapUsed, now.heapUsed || 0),
      external: Math.max(peak.external, now.external || 0),
    })
  }

  get phase(): string {
    return this.currentPhase
  }

  /** Enters a phase: the last one's peak is read (its high-water mark included), then the mark is reset. */
  set phase(next: string) {
    if (next === this.currentPhase) return
    this.sample()
    try {
      // 5: reset the peak resident set size ("VmHWM") to the process's current resident set size.
      writeFileSync(`/proc/${this.pid}/clear_refs`, '5')
    } catch {
      this.hwmByPhase = false
    }
    this.currentPhase = next
  }

  /** The phase whose peak was highest (a phase's high-water mark counts once the mark is reset by phase). */
  get peakPhase(): string {
    let peak = ''
    let bytes = -1
    for (const [phase, rss] of this.phasePeaks) {
      if (rss > bytes) [peak, bytes] = [phase, rss]
    }
    return peak
  }

  sample(): void {
    let status: string
    try {
      status = readFileSync(`/proc/${this.pid}/status`, 'utf8')
    } catch {
      return
    }
    const rss = kilobytes(status, 'VmRSS')
    const hwm = kilobytes(status, 'VmHWM')
    if (rss === null) return
    this.samples += 1
    const phase = this.currentPhase
    const peak = hwm !== null && this.hwmByPhase ? Math.max(rss, hwm) : rss
    if (peak > (this.phasePeaks.get(phase) ?? 0)) this.phasePeaks.set(phase, peak)
    if (rss > this.peakRssBytes) this.peakRssBytes = rss
    if (hwm !== null && hwm > this.hwmBytes) this.hwmBytes = hwm
  }

  /** Takes a last sample (the process must still be running) and stops polling. */
  stop(): void {
    this.sample()
    if (this.timer) clearInterval(this.timer)
    if (this.heapTimer) clearInterval(this.heapTimer)
    this.timer = undefined
    this.heapTimer = undefined
  }

  /** The higher of the polled peak and the kernel's high-water mark. */
  get peakBytes(): number {
    return Math.max(this.peakRssBytes, this.hwmBytes)
  }
}

/** CPU time (user + system) a process has used so far, in seconds; null once it is gone. */
export function processCpuSeconds(pid: number): number | null {
  const times = processCpuTimes(pid)
  return times && times.userS + times.systemS
}

/** CPU time a process has used so far in user space and in the kernel (its system calls), in seconds. */
export function processCpuTimes(pid: number): { userS: number; systemS: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // After the ") " that ends the command name: state is field 3, utime field 14, stime field 15.
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
    return { userS: Number(fields[11]) / CLOCK_TICKS_PER_S, systemS: Number(fields[12]) / CLOCK_TICKS_PER_S }
  } catch {
    return null
  }
}

/**
 * CPU time (user + system) one thread of a process has used so far, in seconds (the main thread's id is the
 * process id); null once it is gone. Unlike wall times on a shared machine, it does not grow while the thread
 * waits for a core.
 */
export function threadCpuSeconds(pid: number, tid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S
  } catch {
    return null
  }
}

const GONE = { userS: Number.NaN, systemS: Number.NaN }

// sysconf(_SC_CLK_TCK): 100 on every Linux this runs on.
const CLOCK_TICKS_PER_S = 100

/**
 * CPU used over a window by one server process and by the PostgreSQL processes working for it: the backends
 * connected to the bench database plus the WAL writer, checkpointer and background writer. (Other tenants of the
 * shared server are left out.) Backends that appear during the window count in full; ones that exit are lost.
 */
export class CpuWindow {
  private constructor(
    private readonly pid: number,
    private readonly pg: { adminUrl: string; database: string },
    private readonly serverStart: { userS: number; systemS: number },
    private readonly postgresStart: Map<number, number>,
    private readonly started: number,
  ) {}

  static async start(pid: number, pg: { adminUrl: string; database: string }): Promise<CpuWindow> {
    const postgres = await postgresCpu(pg)
    return new CpuWindow(pid, pg, processCpuTimes(pid) ?? GONE, postgres, performance.now())
  }

  async end(): Promise<{ wallS: number; serverCpuS: number; serverSystemS: number; postgresCpuS: number }> {
    const wallS = (performance.now() - this.started) / 1000
    const now = processCpuTimes(this.pid) ?? GONE
    const serverSystemS = now.systemS - this.serverStart.systemS
    const serverCpuS = now.userS - this.serverStart.userS + serverSystemS
    let postgresCpuS = 0
    for (const [pid, seconds] of await postgresCpu(this.pg))
      postgresCpuS += seconds - (this.postgresStart.get(pid) ?? 0)
    return { wallS, serverCpuS, serverSystemS, postgresCpuS }
  }
}

async function postgresCpu(pg: { adminUrl: string; database: string }): Promise<Map<number, number>> {
  const { rows } = await withClient(pg.adminUrl, (client) =>
    client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity
       WHERE datname = $1 OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
      [pg.database],
    ),
  )
  const cpu = new Map<number, number>()
  for (const { pid } of rows) {
    const seconds = processCpuSeconds(pid)
    if (seconds !== null) cpu.set(pid, seconds)
  }
  return cpu
}

function kilobytes(status: string, field: string): number | null {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)
  return match ? Number(match[1]) * 1024 : null
}
