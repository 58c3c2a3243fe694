import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runCrashScenario } from '../helpers/crash-scenario.ts'

describe('crash safety: kill -9 under load, restart on the same database', () => {
  it('keeps every acknowledged write, decides each outcome once, and the audit chain verifies', async (t) => {
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
})
