import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { checkDecomposition, strictDecompositionErrors } from '../../../src/domain/fanout/decomposition.ts'

const subtasks = (owners: Record<string, string[]>) =>
  Object.entries(owners).map(([subtask_id, facts]) => ({ subtask_id, facts }))

describe('checkDecomposition', () => {
  it('passes a partition of the facts', () => {
    assert.deepEqual(checkDecomposition(['a', 'b'], subtasks({ s1: ['a'], s2: ['b'] })), {
      uncovered_facts: [],
      overlaps: [],
    })
  })

  it('reports facts no subtask owns, sorted', () => {
    const report = checkDecomposition(['z', 'a', 'm'], subtasks({ s1: ['m'], s2: [] }))
    assert.deepEqual(report.uncovered_facts, ['a', 'z'])
  })

  it('reports facts owned by two or more subtasks, sorted by fact, owners sorted', () => {
    const report = checkDecomposition(
      ['floor', 'discount', 'tiers'],
      subtasks({ st_5: ['floor', 'tiers'], st_3: ['floor', 'discount'], st_1: ['tiers', 'floor'] }),
    )
    assert.deepEqual(report.overlaps, [
      { fact: 'floor', subtasks: ['st_1', 'st_3', 'st_5'] },
      { fact: 'tiers', subtasks: ['st_1', 'st_5'] },
    ])
  })

  it('does not count a subtask listing a fact twice as an overlap', () => {
    assert.deepEqual(checkDecomposition(['a'], subtasks({ s1: ['a', 'a'] })).overlaps, [])
  })

  it('the Vantage decomposition: both pricing workers own the floor, nobody the partner discount', () => {
    const report = checkDecomposition(
      ['vantage.enterprise.floor', 'vantage.partner.discount'],
      subtasks({ st_3: ['vantage.enterprise.floor'], st_5: ['vantage.enterprise.floor'] }),
    )
    assert.deepEqual(report, {
      uncovered_facts: ['vantage.partner.discount'],
      overlaps: [{ fact: 'vantage.enterprise.floor', subtasks: ['st_3', 'st_5'] }],
    })
  })

  it('does not depend on the order of facts or subtasks', () => {
    const owners = fc.dictionary(fc.stringMatching(/^s[0-9]$/), fc.subarray(['a', 'b', 'c', 'd']), {
      minKeys: 1,
      maxKeys: 5,
    })
    fc.assert(
      fc.property(owners, (map) => {
        const list = subtasks(map)
        assert.deepEqual(
          checkDecomposition(['d', 'c', 'b', 'a'], [...list].reverse()),
          checkDecomposition(['a', 'b', 'c', 'd'], list),
        )
      }),
    )
  })
})

describe('strictDecompositionErrors', () => {
  it('is empty for a partition', () => {
    assert.deepEqual(strictDecompositionErrors(['a', 'b'], subtasks({ s1: ['a'], s2: ['b'] })), [])
  })

  it('names each unowned fact at /facts/<i>', () => {
    assert.deepEqual(strictDecompositionErrors(['a', 'b', 'c'], subtasks({ s1: ['b'] })), [
      { path: '/facts/0', message: 'no subtask owns this fact' },
      { path: '/facts/2', message: 'no subtask owns this fact' },
    ])
  })

  it('names every owner of an overlapping fact at /subtasks/<i>/facts/<j>, naming the others', () => {
    const errors = strictDecompositionErrors(
      ['a', 'b'],
      subtasks({ s1: ['b', 'a'], s2: ['a'], s3: ['b'], s4: ['a'] }),
    )
    assert.deepEqual(errors, [
      { path: '/subtasks/0/facts/0', message: 'fact "b" is also owned by "s3"' },
      { path: '/subtasks/0/facts/1', message: 'fact "a" is also owned by "s2", "s4"' },
      { path: '/subtasks/1/facts/0', message: 'fact "a" is also owned by "s1", "s4"' },
      { path: '/subtasks/2/facts/0', message: 'fact "b" is also owned by "s1"' },
      { path: '/subtasks/3/facts/0', message: 'fact "a" is also owned by "s1", "s2"' },
    ])
  })

  it('lists unowned facts before overlaps', () => {
    const errors = strictDecompositionErrors(['a', 'b'], subtasks({ s1: ['a'], s2: ['a'] }))
    assert.deepEqual(
      errors.map((error) => error.path),
      ['/facts/1', '/subtasks/0/facts/0', '/subtasks/1/facts/0'],
    )
  })

  it('reports a fact a subtask lists twice once, at its first index', () => {
    const errors = strictDecompositionErrors(['a'], subtasks({ s1: ['a', 'a'], s2: ['a'] }))
    assert.deepEqual(
      errors.map((error) => error.path),
      ['/subtasks/0/facts/0', '/subtasks/1/facts/0'],
    )
  })

  it('has an error exactly when the check reports something', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.stringMatching(/^s[0-9]$/), fc.subarray(['a', 'b', 'c']), { maxKeys: 4 }),
        (map) => {
          const list = subtasks(map)
          const report = checkDecomposition(['a', 'b', 'c'], list)
          const errors = strictDecompositionErrors(['a', 'b', 'c'], list)
          const owners = report.overlaps.reduce((sum, overlap) => sum + overlap.subtasks.length, 0)
          assert.equal(errors.length, report.uncovered_facts.length + owners)
        },
      ),
    )
  })
})
