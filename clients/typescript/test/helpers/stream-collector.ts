import type { ArbiterClient, ManifestEvent, ManifestStreamOptions } from '../../src/index.ts'

/** Consumes a stream in the background; `until(n)` waits for the n-th event. */
export function collect(client: ArbiterClient, options: ManifestStreamOptions = {}) {
  const controller = new AbortController()
  const events: ManifestEvent[] = []
  const connections: (string | undefined)[] = []
  const waiters: { count: number; resolve: () => void }[] = []
  let failure: unknown
  const wake = () => {
    for (const waiter of [...waiters]) {
      if (events.length >= waiter.count || failure !== undefined) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
    }
  }
  const done = (async () => {
    try {
      for await (const event of client.manifests.stream({
        ...options,
        signal: controller.signal,
        onConnect: ({ lastEventId }) => {
          connections.push(lastEventId)
          wake()
        },
      })) {
        events.push(event)
        wake()
      }
    } catch (err) {
      failure = err
      wake()
    }
  })()
  const waitFor = (test: () => boolean, what: string, timeoutMs = 30_000) =>
    new Promise<void>((resolve, reject) => {
      const started = Date.now()
      const tick = () => {
        if (failure !== undefined) reject(failure)
        else if (test()) resolve()
        else if (Date.now() - started > timeoutMs) reject(new Error(`timed out waiting for ${what}`))
        else setTimeout(tick, 20)
      }
      tick()
    })
  return {
    events,
    connections,
    failure: () => failure,
    until: (count: number, timeoutMs?: number) =>
      waitFor(() => events.length >= count, `${count} events`, timeoutMs),
    connected: (count = 1) => waitFor(() => connections.length >= count, `${count} connections`),
    async stop() {
      controller.abort()
      await done
    },
  }
}
