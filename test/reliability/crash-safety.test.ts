import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runCrashScenario } from '../helpers/crash-scenario.ts'

describe('crash safety: kill -9 under load, restart on the same database', () => {
  it('keeps every acknowledged write, decides each outcome once, and the audit log verifies', async (t) => {
    const report = await runCrashScenario(t, {
      cycles: 3,
      workers: 6,
      killAfterMs: [400, 1_500],
      settleMs: 500,
      probes: true,
    })
    assert.ok(report.acked.manifests > 0, 'outcomes were decided between the kills')
    t.diagnostic(
      `kill cycles ${report.cycles} (after ${report.killDelaysMs.join('/')} ms, in flight ${report.inFlightAtKills.join('/')}), ` +
        `requests ${report.requests}, network failures ${report.networkFailures}, acknowledged ${JSON.stringify(report.acked)}, ` +
        `audit records ${report.auditRecords}`,
    )
  })

  it('hands the audit sequencer to another replica within 5 s when its holder is killed mid-batch', async (t) => {
    const report = await runCrashScenario(t, {
      cycles: 2,
      workers: 6,
      killAfterMs: [800, 1_500],
      settleMs: 500,
      replicas: 2,
    })
    assert.ok(report.acked.manifests > 0, 'outcomes were decided between the kills')
    assert.equal(report.takeoverMs.length, 2)
    for (const ms of report.takeoverMs) assert.ok(ms < 5_000, `a surviving replica took over after ${ms} ms`)
    t.diagnostic(
      `replicas 2, kills of the lease holder ${report.cycles} (after ${report.killDelaysMs.join('/')} ms, in flight ${report.inFlightAtKills.join('/')}), ` +
        `takeover ${report.takeoverMs.join('/')} ms, requests ${report.requests}, acknowledged ${JSON.stringify(report.acked)}, ` +
        `audit records ${report.auditRecords}`,
    )
  })
})
