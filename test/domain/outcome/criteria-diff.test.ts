import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { criteriaDivergence } from '../../../src/domain/outcome/criteria-diff.ts'

describe('criteriaDivergence', () => {
  it('is null when a document is unknown (only a hash was submitted)', () => {
    assert.equal(criteriaDivergence(undefined, { x: 1 }), null)
    assert.equal(criteriaDivergence({ x: 1 }, undefined), null)
    assert.equal(criteriaDivergence(undefined, undefined), null)
  })

  it('is null when both documents are known and equal', () => {
    assert.equal(criteriaDivergence({ x: [1], y: 'a' }, { y: 'a', x: [1] }), null)
  })

  it('lists the differences when both are known and differ', () => {
    assert.deepEqual(criteriaDivergence({ x: 1 }, { x: 2 }), [{ pointer: '/x', a: 1, b: 2 }])
  })

  it('treats a null document as known', () => {
    assert.deepEqual(criteriaDivergence(null, { x: 1 }), [{ pointer: '', a: null, b: { x: 1 } }])
  })
})
