import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { actionOwnerErrors } from '../../../src/domain/outcome/action-owner.ts'

const OUTCOME = {
  expected_orchestrators: ['orch-a', 'orch-b'],
  interpreting_orchestrators: ['orch-b', 'orch-c'],
}

describe('actionOwnerErrors', () => {
  const rows: { owner: string | undefined; ok: boolean; why: string }[] = [
    { owner: undefined, ok: true, why: 'no owner named: the usual rule chooses' },
    { owner: 'orch-a', ok: true, why: 'expected, not interpreting' },
    { owner: 'orch-b', ok: true, why: 'expected and interpreting' },
    { owner: 'orch-c', ok: true, why: 'interpreting, not expected' },
    { owner: 'nobody-at-all', ok: false, why: 'neither' },
    { owner: 'ORCH-A', ok: false, why: 'ids are compared exactly' },
    { owner: '', ok: false, why: 'the empty id' },
  ]
  for (const { owner, ok, why } of rows) {
    it(`${ok ? 'accepts' : 'refuses'} ${JSON.stringify(owner)} (${why})`, () => {
      const errors = actionOwnerErrors(owner, OUTCOME)
      assert.deepEqual(
        errors.map((e) => e.path),
        ok ? [] : ['/action_owner'],
      )
    })
  }

  it('lists who may own the action', () => {
    const [error] = actionOwnerErrors('nobody-at-all', OUTCOME)
    assert.match(error!.message, /\["orch-a","orch-b","orch-c"\]/)
  })

  it('refuses every owner of an outcome nobody expected or interpreted', () => {
    assert.equal(
      actionOwnerErrors('orch-a', { expected_orchestrators: [], interpreting_orchestrators: [] }).length,
      1,
    )
  })
})
