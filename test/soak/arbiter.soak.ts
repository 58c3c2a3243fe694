import assert from 'node:assert/strict'
import { once } from 'node:events'
import net from 'node:net'
import { describe, it } from 'node:test'
import { buildTestApp } from '../helpers/app.ts'
import { runCrashScenario } from '../helpers/crash-scenario.ts'
import { runReplicaScenario } from '../helpers/replica-scenario.ts'

/**
 * The long versions of test/reliability: more kill cycles, more outcomes racing across more replicas, and the
 * slow-loris client that takes the real request timeout to be cut off. Each part is bounded in time and stops
 * by itself; the whole file stays under ten minutes. Run with `npm run test:soak` (add TEST_DATABASE_URL for a
 * real PostgreSQL).
 */

const embedded = !process.env.TEST_DATABASE_URL
const MINUTE = 60_000

describe('soak', () => {
  it('survives 10 kill -9 cycles under load without losing an acknowledged write', {
    timeout: 4 * MINUTE,
  }, async (t) => {
    const report = await runCrashScenario(t, {
      cycles: 10,
      workers: 8,
      killAfterMs: [300, 3_000],
      settleMs: 1_000,
      probes: true,
    })
    assert.ok(report.acked.manifests > 0)
    t.diagnostic(
      `kill cycles ${report.cycles} (in flight at kills ${report.inFlightAtKills.join('/')}), requests ${report.requests}, ` +
        `acknowledged ${JSON.stringify(report.acked)}, audit records ${report.auditRecords}`,
    )
  })

  it('decides 40 outcomes once each across 4 replicas under evaluate storms', {
    timeout: 3 * MINUTE,
  }, async (t) => {
    const report = await runReplicaScenario(t, {
      replicas: 4,
      outcomes: 40,
      evaluationsPerOutcome: 50,
      resolutionsPerWave: 4,
      outcomesPerWave: embedded ? 5 : 10,
    })
    assert.equal(report.evaluations, 2_000)
    t.diagnostic(
      `replicas ${report.replicas}, outcomes ${report.outcomes}, evaluations ${report.evaluations}, ` +
        `late interpretations landed/dissent ${report.lateInterpretations.landed}/${report.lateInterpretations.dissent}, ` +
        `resolutions won/refused ${report.resolutions.won}/${report.resolutions.refused}, audit records ${report.auditRecords}`,
    )
  })

  it('disconnects a client that sends its headers byte by byte forever', {
    timeout: 2 * MINUTE,
  }, async (t) => {
    const app = await buildTestApp(t)
    await app.app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.app.server.address() as net.AddressInfo).port
    const socket = net.connect(port, '127.0.0.1')
    await once(socket, 'connect')
    socket.on('error', () => {})
    let answer = ''
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1')
    })
    const started = Date.now()
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ')
    // One byte a second, never finishing the headers. requestTimeout is 30 s and Node sweeps for expired
    // requests every 30 s, so the cut comes between 30 and 60 s; past 90 s the protection is gone.
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write('a')
    }, 1_000)
    const closed = once(socket, 'close')
    const limit = new Promise((resolve) => setTimeout(resolve, 90_000).unref())
    await Promise.race([closed, limit])
    clearInterval(drip)
    const elapsed = Date.now() - started
    const wasClosed = socket.destroyed
    socket.destroy()
    t.diagnostic(
      `slow client cut after ${elapsed} ms, answer ${JSON.stringify(answer.split('\r\n')[0] ?? '')}`,
    )
    assert.ok(wasClosed, `the slow client was still connected after ${elapsed} ms`)
    assert.ok(elapsed >= 25_000, `not cut before the request timeout (${elapsed} ms)`)
    assert.ok(answer === '' || answer.startsWith('HTTP/1.1 408'), answer.slice(0, 100))
  })
})
