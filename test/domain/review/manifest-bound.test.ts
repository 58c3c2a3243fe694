import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  type BoundReview,
  type BoundVerdict,
  reviewManifestBound,
  verdictManifestWeight,
} from '../../../src/domain/review/manifest-bound.ts'
import { canonicalJson, sha256 } from '../../../src/domain/shared/canonical-json.ts'

const review: BoundReview = {
  orchestrator_id: 'orch',
  review_key: 'rk',
  subject: { digest: `sha256:${'ab'.repeat(32)}` },
  implementer: { model: 'impl', context_id: 'c0' },
  judges: [
    { judge_id: 'j1', model: 'model-one' },
    { judge_id: 'j2', model: 'model-two' },
  ],
}

const verdict = (judge: string, findings: number): BoundVerdict => ({
  judge_id: judge,
  summary: `${judge} read it`,
  concerns: ['a concern'],
  findings: Array.from({ length: findings }, (_, i) => ({
    title: `Finding  ${i}`,
    location: `src/f${i}.ts:1`,
  })),
})

describe('verdictManifestWeight', () => {
  it('weighs a verdict with its digest exactly as without it', () => {
    for (const v of [verdict('j1', 0), verdict('j1', 7), verdict('j2', 30)]) {
      const digest = sha256(canonicalJson(v))
      assert.equal(verdictManifestWeight(review, { ...v, digest }), verdictManifestWeight(review, v))
    }
    const all = [verdict('j1', 12), verdict('j2', 40)]
    const withDigests = all.map((v) => ({ ...v, digest: sha256(canonicalJson(v)) }))
    assert.equal(reviewManifestBound(review, withDigests), reviewManifestBound(review, all))
  })

  it('weighs each verdict once: its digest and its judge’s model name the weight', () => {
    const digest = sha256('a verdict weighed once')
    const first = verdictManifestWeight(review, { ...verdict('j1', 3), digest })
    // The same digest with other contents can only be a memo hit: the weight is the one first computed.
    assert.equal(verdictManifestWeight(review, { ...verdict('j1', 90), digest }), first)
    // Another judge's model makes another weight.
    const other = { ...review, judges: [{ judge_id: 'j1', model: 'a-much-longer-model-name' }] }
    assert.notEqual(verdictManifestWeight(other, { ...verdict('j1', 3), digest }), first)
  })
})
