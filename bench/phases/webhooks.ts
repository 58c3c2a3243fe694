import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { cfg } from '../config.ts'
import { createDatabase, withClient } from '../database.ts'
import { HttpTarget, type LatencySummary, Recorder, runLoops, summarize } from '../load.ts'
import { type LoopFigures, log, measuredLoops, onCleanup } from '../run-context.ts'
import { startArbiter } from '../servers.ts'
import { createKey, decidePath, makeEvidence } from '../workloads.ts'

/**
 * Phase `webhooks`: what pushing decisions to receivers costs and how fast they arrive. Its own Arbiter and
 * database (webhooks to loopback receivers need ARBITER_WEBHOOK_ALLOW_PRIVATE, and the deliveries it leaves
 * behind must not weigh on the other phases), three receivers in this process, answering 204 at once.
 *
 * - decide with three webhooks subscribed to every event vs none (the same three, disabled), in
 *   `cfg.decideRounds` interleaved rounds: the throughput ratio, median over the rounds;
 * - delivery lag: a manifest's evaluate answer at the client (its transaction has committed) → its
 *   `manifest.issued` delivery received, for every delivery of the rounds with webhooks on;
 * - catch-up: one receiver down (connection refused) while `CATCH_UP_EVENTS` manifests are decided, then back:
 *   deliveries per second until it has every one. The retry delay is shortened to 1 s
 *   (ARBITER_WEBHOOK_RETRY_SCHEDULE_MS) so the figure is the delivery worker's rate, not the production backoff
 *   schedule's wait before the next attempt.
 */
export interface WebhooksPhase {
  loops: number
  rounds: { round: number; noneRps: number; threeRps: number; ratio: number }[]
  /** Median over the rounds of (decide req/s with three webhooks) / (with none). */
  throughputRatio: number
  none: LoopFigures
  three: LoopFigures
  /** Evaluate answer → manifest.issued delivery received, ms, every receiver. */
  lag: LatencySummary
  /** Deliveries that arrived more than once (a lost answer, or a retry racing a slow one). */
  duplicates: number
  catchUp: { events: number; seconds: number; perSecond: number; outageSeconds: number }
}

const CATCH_UP_EVENTS = 10_000
/** How long the receivers get to drain a window's deliveries before the phase gives up. */
const DRAIN_TIMEOUT_MS = 300_000

class Receiver {
  /** webhook-id → when it first arrived (ms since epoch). */
  readonly arrivals = new Map<string, number>()
  /** manifest_id → when its manifest.issued delivery first arrived. */
  readonly manifests = new Map<string, number>()
  duplicates = 0
  private server: Server | null = null
  port = 0

  async start(port = 0): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const at = Date.now()
        res.writeHead(204).end()
        const id = String(req.headers['webhook-id'])
        if (this.arrivals.has(id)) {
          this.duplicates += 1
          return
        }
        this.arrivals.set(id, at)
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          type: string
          data: { manifest?: { manifest_id?: string } }
        }
        const manifestId = event.data.manifest?.manifest_id
        if (event.type === 'manifest.issued' && manifestId) this.manifests.set(manifestId, at)
      })
    })
    server.keepAliveTimeout = 30_000
    server.listen(port, '127.0.0.1')
    await once(server, 'listening')
    this.server = server
    this.port = (server.address() as AddressInfo).port
  }

  /** Down: the port refuses connections until `start(this.port)`. */
  async stop(): Promise<void> {
    const server = this.server
    if (!server) return
    this.server = null
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

async function waitFor(
  what: string,
  done: () => boolean | Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`webhooks: timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export async function phaseWebhooks(): Promise<WebhooksPhase> {
  const db = await createDatabase(cfg.adminUrl, 'webhooks', cfg.dbSettings)
  onCleanup('drop webhooks database', () => db.drop())
  const arbiter = await startArbiter({
    repoRoot: cfg.arbiterRoot,
    databaseUrl: db.url,
    poolMax: cfg.poolMax,
    name: 'arbiter-webhooks',
    env: { ARBITER_WEBHOOK_ALLOW_PRIVATE: 'true', ARBITER_WEBHOOK_RETRY_SCHEDULE_MS: '1000' },
  })
  onCleanup('stop webhooks arbiter', () => arbiter.stop())
  const loops = cfg.connections
  const target = new HttpTarget(arbiter.origin, loops)
  onCleanup('close webhooks client', () => target.close())
  const admin = arbiter.adminKey
  const orchA = await createKey(target, admin, {
    role: 'orchestrator',
    orchestrator_ids: ['orch-a'],
    label: 'a',
  })
  const orchB = await createKey(target, admin, {
    role: 'orchestrator',
    orchestrator_ids: ['orch-b'],
    label: 'b',
  })

  const receivers = [new Receiver(), new Receiver(), new Receiver()]
  for (const receiver of receivers) await receiver.start()
  onCleanup('stop receivers', async () => {
    for (const receiver of receivers) await receiver.stop()
  })
  const adminCall = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${arbiter.origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    const text = await response.text()
    if (!response.ok) throw new Error(`webhooks: ${method} ${path} → ${response.status} ${text}`)
    return JSON.parse(text) as { webhook_id: string }
  }
  const webhookIds: string[] = []
  for (const receiver of receivers) {
    const created = await adminCall('POST', '/v1/webhooks', {
      url: `http://127.0.0.1:${receiver.port}/hook`,
      events: ['manifest.issued', 'escalation.opened', 'escalation.resolved'],
      description: 'bench receiver',
    })
    webhookIds.push(created.webhook_id)
  }
  const setDisabled = async (ids: readonly string[], disabled: boolean) => {
    for (const id of ids) await adminCall('PATCH', `/v1/webhooks/${id}`, { disabled })
  }

  const evidence = makeEvidence(1024)
  /** manifest_id → when its evaluate answer arrived, for the windows whose deliveries are measured. */
  let acknowledged: Map<string, number> | null = null
  const decide = async (loop: number, rec: Recorder) => {
    const { manifestId } = await decidePath(target, rec, {
      orchestrators: ['orch-a', 'orch-b'],
      creatorKey: orchA,
      keyFor: (id) => (id === 'orch-a' ? orchA : orchB),
      evidence,
      expectAll: true,
      subagentId: `refund-agent-${loop % 8}`,
    })
    acknowledged?.set(manifestId, Date.now())
  }
  const window = { loops, durationMs: cfg.durationS * 1000 }
  log(
    `webhooks: decide with 3 webhooks on every event vs none, ${cfg.decideWarmupS}s warm-up, ${cfg.decideRounds} interleaved rounds of ${cfg.durationS}s each`,
  )
  await runLoops({ loops, durationMs: cfg.decideWarmupS * 1000 }, decide)
  const drained = (manifests: Map<string, number>) =>
    waitFor(
      'every receiver to get the window’s manifests',
      () => receivers.every((r) => [...manifests.keys()].every((id) => r.manifests.has(id))),
      DRAIN_TIMEOUT_MS,
    )
  const lags: number[] = []
  const rounds: WebhooksPhase['rounds'] = []
  const windows: { none: LoopFigures; three: LoopFigures }[] = []
  for (let round = 1; round <= cfg.decideRounds; round++) {
    const measureNone = async () => {
      await setDisabled(webhookIds, true)
      return measuredLoops(db.name, arbiter.proc.pid, window, decide)
    }
    const measureThree = async () => {
      await setDisabled(webhookIds, false)
      const manifests = new Map<string, number>()
      acknowledged = manifests
      const figures = await measuredLoops(db.name, arbiter.proc.pid, window, decide)
      acknowledged = null
      await drained(manifests)
      for (const [manifestId, ackAt] of manifests) {
        for (const receiver of receivers) lags.push(receiver.manifests.get(manifestId)! - ackAt)
      }
      return figures
    }
    const threeFirst = round % 2 === 0
    const three = threeFirst ? await measureThree() : null
    const none = await measureNone()
    const measuredThree = three ?? (await measureThree())
    const ratio = measuredThree.requestsPerSecond / none.requestsPerSecond
    rounds.push({ round, noneRps: none.requestsPerSecond, threeRps: measuredThree.requestsPerSecond, ratio })
    windows.push({ none, three: measuredThree })
    log(
      `webhooks round ${round}: ${none.requestsPerSecond.toFixed(0)} req/s without, ${measuredThree.requestsPerSecond.toFixed(0)} with 3 webhooks (${ratio.toFixed(2)}×)`,
    )
  }
  const byRatio = rounds.map((r, i) => ({ r, i })).sort((x, y) => x.r.ratio - y.r.ratio)
  const median = byRatio[(byRatio.length - 1) >> 1]!
  const lag = summarize(lags)
  log(
    `webhooks: delivery lag p50 ${lag.p50.toFixed(1)} ms, p99 ${lag.p99.toFixed(1)} ms over ${lag.count} deliveries`,
  )

  // Catch-up: one webhook on, its receiver down while CATCH_UP_EVENTS manifests are decided, then back up.
  const [catcher] = receivers as [Receiver, Receiver, Receiver]
  await setDisabled(webhookIds.slice(1), true)
  await setDisabled(webhookIds.slice(0, 1), false)
  const pendingCount = () =>
    withClient(db.url, async (client) => {
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1::uuid AND status = 'pending'`,
        [webhookIds[0]],
      )
      return Number(rows[0]?.n ?? 0)
    })
  await catcher.stop()
  const before = catcher.arrivals.size
  const outageStarted = performance.now()
  log(`webhooks: receiver down; deciding ${CATCH_UP_EVENTS} outcomes`)
  // Exactly CATCH_UP_EVENTS manifests: each loop takes the next one until they are all taken.
  let taken = 0
  const outageRec = new Recorder()
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (taken < CATCH_UP_EVENTS) {
        taken += 1
        try {
          await decide(loop, outageRec)
        } catch {
          taken -= 1 // counted in outageRec; another loop (or this one) takes it again
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
      }
    }),
  )
  await waitFor(
    'the outage’s deliveries to be pending',
    async () => (await pendingCount()) >= CATCH_UP_EVENTS,
    60_000,
  )
  const outageSeconds = (performance.now() - outageStarted) / 1000
  await catcher.start(catcher.port)
  const upAt = performance.now()
  await waitFor(
    'the receiver to catch up',
    () => catcher.arrivals.size - before >= CATCH_UP_EVENTS,
    DRAIN_TIMEOUT_MS,
  )
  const seconds = (performance.now() - upAt) / 1000
  const events = catcher.arrivals.size - before
  log(
    `webhooks: caught up on ${events} deliveries in ${seconds.toFixed(1)} s (${(events / seconds).toFixed(0)}/s)`,
  )
  await arbiter.stop()

  return {
    loops,
    rounds,
    throughputRatio: median.r.ratio,
    none: windows[median.i]!.none,
    three: windows[median.i]!.three,
    lag,
    duplicates: receivers.reduce((sum, r) => sum + r.duplicates, 0),
    catchUp: { events, seconds, perSecond: events / seconds, outageSeconds },
  }
}
