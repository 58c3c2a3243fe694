import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runReplicaScenario } from '../helpers/replica-scenario.ts'

describe('races across replicas on one database', () => {
  it('decides each outcome once under 50 concurrent evaluations, late interpretations, racing resolutions and a sequencer crash', async (t) => {
    const embedded = !process.env.TEST_DATABASE_URL
    const report = await runReplicaScenario(t, {
      replicas: 3,
      outcomes: 10,
      evaluationsPerOutcome: 50,
      resolutionsPerWave: 3,
      outcomesPerWave: embedded ? 5 : 10,
    })
    assert.equal(report.evaluations, 500)
    t.diagnostic(
      `replicas ${report.replicas}, outcomes ${report.outcomes}, evaluations ${report.evaluations}, ` +
        `late interpretations landed/dissent ${report.lateInterpretations.landed}/${report.lateInterpretations.dissent}, ` +
        `resolutions won/refused ${report.resolutions.won}/${report.resolutions.refused}, audit records ${report.auditRecords}, ` +
        `sequencer taken over ${report.sequencerTakeoverMs} ms after its holder crashed`,
    )
  })
})
