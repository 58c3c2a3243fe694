import { setTimeout as sleep } from 'node:timers/promises'

/** One answered request of a load run, as the reliability tests inspect it afterwards. */
export interface Sample {
  label: string
  status: number
  headers: Record<string, unknown>
  body: string
  startedAt: number
  endedAt: number
}

/**
 * Runs `worker(i)` in `concurrency` loops until `stop()` is called; each loop runs its next iteration as
 * soon as the previous one ends. Errors thrown by a worker are collected, not swallowed.
 */
export function runLoad(concurrency: number, worker: (loop: number) => Promise<void>) {
  let stopping = false
  const errors: unknown[] = []
  const loops = Array.from({ length: concurrency }, async (_, loop) => {
    while (!stopping) {
      try {
        await worker(loop)
      } catch (err) {
        errors.push(err)
        await sleep(10)
      }
    }
  })
  return {
    get stopping() {
      return stopping
    },
    errors,
    async stop() {
      stopping = true
      await Promise.all(loops)
    },
  }
}

/** Polls `check` every `intervalMs` until it returns true; returns the time it took, or throws after `timeoutMs`. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  { timeoutMs = 15_000, intervalMs = 100 } = {},
): Promise<number> {
  const started = Date.now()
  for (;;) {
    if (await check().catch(() => false)) return Date.now() - started
    if (Date.now() - started > timeoutMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(intervalMs)
  }
}

/** RFC 9457 checks every error answer must pass: problem+json, `status` equal to the HTTP status. */
export function problemViolation(sample: Pick<Sample, 'status' | 'headers' | 'body'>): string | null {
  const type = String(sample.headers['content-type'] ?? '')
  if (!type.startsWith('application/problem+json')) return `content-type ${type}`
  let body: Record<string, unknown>
  try {
    body = JSON.parse(sample.body)
  } catch {
    return 'body is not JSON'
  }
  if (body.status !== sample.status) return `body.status ${String(body.status)} ≠ ${sample.status}`
  for (const field of ['type', 'title', 'detail']) {
    if (typeof body[field] !== 'string') return `${field} is not a string`
  }
  return null
}
