import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, it } from 'node:test'
import { MemorySampler } from '../../bench/processes.ts'
import { type MemoryReport, peakRssRows } from '../../bench/report.ts'

const MB = 1024 * 1024

function instance(byPhase: Record<string, number>, peakBytes: number): MemoryReport['instances'][number] {
  return {
    name: 'arbiter',
    peakBytes,
    peakPolledRssBytes: peakBytes,
    hwmBytes: peakBytes,
    hwmByPhase: true,
    peakPhase: '',
    samples: 10,
    byPhase,
    heapByPhase: {},
  }
}

describe('the bench report: peak RSS', () => {
  it('holds the phases other than worst-case to the general target, and worst-case to its own', () => {
    const rows = peakRssRows(
      instance(
        {
          'start-up': 110 * MB,
          decide: 200 * MB,
          'worst-case: cases': 300 * MB,
          'worst-case: list reads': 367 * MB,
          'worst-case: streams': 250 * MB,
        },
        367 * MB,
      ),
      67 * MB,
    )
    assert.equal(rows.length, 2)
    const [general, worst] = rows
    assert.match(general!.figure, /phases other than worst-case \(during decide\)/)
    assert.equal(general!.arbiter, '200 MB')
    assert.equal(general!.target, '< 256 MB')
    assert.equal(general!.result, 'PASS')
    assert.match(worst!.figure, /worst-case phase, its own target \(during worst-case: list reads\)/)
    assert.equal(worst!.arbiter, '367 MB')
    assert.equal(worst!.target, '< 512 MB')
    assert.equal(worst!.result, 'PASS')
  })

  it('without a worst-case phase, counts the process high-water mark (a spike between two polls)', () => {
    const [general, ...more] = peakRssRows(instance({ 'audit fill 10000': 150 * MB }, 270 * MB), 67 * MB)
    assert.equal(more.length, 0)
    assert.equal(general!.arbiter, '270 MB')
    assert.equal(general!.result, 'MISS')
  })
})

describe('MemorySampler', () => {
  it("credits a phase's high-water mark to that phase, and starts the next one from the RSS of the moment", async (t) => {
    // A child that touches 160 MB, frees it and says so: no poll sees the spike, the kernel's mark does.
    const child = spawn(
      process.execPath,
      [
        '--expose-gc',
        '-e',
        `let b = Buffer.alloc(160 * 1024 * 1024, 1); b = null; globalThis.gc();
         setTimeout(() => { process.stdout.write('freed\\n'); setTimeout(() => {}, 30000) }, 300)`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    t.after(() => child.kill('SIGKILL'))
    await once(child.stdout, 'data')
    const sampler = new MemorySampler(child.pid!)
    sampler.phase = 'after'
    sampler.sample()
    assert.equal(sampler.hwmByPhase, true)
    assert.ok(
      sampler.phasePeaks.get('start-up')! >= 160 * MB,
      `start-up ${sampler.phasePeaks.get('start-up')}`,
    )
    assert.ok(sampler.phasePeaks.get('after')! < 120 * MB, `after ${sampler.phasePeaks.get('after')}`)
    assert.ok(sampler.hwmBytes >= 160 * MB)
    assert.equal(sampler.peakPhase, 'start-up')
  })
})
