import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import {
  ArbiterError,
  type CreateFanoutBody,
  type CreateReviewBody,
  type FanoutResultBody,
  isDecidePending,
  isReconcilePending,
  paginate,
} from '../src/index.ts'
import { type LiveArbiter, startLiveArbiter } from './helpers/live.ts'

// One live Arbiter for the file: PostgreSQL at TEST_DATABASE_URL, else the embedded database.
const live: LiveArbiter = await startLiveArbiter({ after })
const scout = live.client(await live.key('orchestrator', ['scout']))
const other = live.client(await live.key('orchestrator', ['other']))
const dashboard = live.client(await live.key('dashboard'))

const FACT = 'refund.amount'

/** An envelope without `audit_seq`, which is placed beside the signature once the log has sequenced it. */
function signedPart(result: object): object {
  const { audit_seq: _seq, ...signed } = result as { audit_seq?: unknown }
  return signed
}

function workerResult(subtaskId: string, uri: string): FanoutResultBody {
  return {
    subtask_id: subtaskId,
    status: 'DONE',
    summary: `read ${uri}`,
    evidence: [uri],
    claims: [{ fact: FACT, value: { amount: 42, currency: 'EUR' }, sources: [{ uri }] }],
    worker: { model: 'model-x', context_id: `ctx-${subtaskId}` },
  }
}

describe('a fan-out through the client', () => {
  it('creates it, collects each worker’s result, reconciles, verifies the manifest, and reads it back', async () => {
    const body: CreateFanoutBody = {
      orchestrator_id: 'scout',
      fanout_key: 'refund-42',
      question: 'How much was refunded?',
      facts: [FACT],
      subtasks: [
        { subtask_id: 'st_1', scope: 'the ledger', facts: [FACT] },
        { subtask_id: 'st_2', scope: 'the payment provider', facts: [FACT] },
      ],
    }
    const fanout = await scout.fanouts.create(body)
    assert.equal(fanout.status, 'open')
    assert.deepEqual(await scout.fanouts.create(body), fanout, 'the natural key gives the same fan-out back')

    const first = await scout.fanouts.submitResult(
      fanout.fanout_id,
      workerResult('st_1', 'ledger://refunds/42'),
    )
    assert.equal(first.revision, 1)
    assert.deepEqual(
      await scout.fanouts.submitResult(fanout.fanout_id, workerResult('st_1', 'ledger://refunds/42')),
      first,
      'the same body again is the same result (so a retried call is harmless)',
    )

    const waiting = await scout.fanouts.reconcile(fanout.fanout_id)
    assert.ok(isReconcilePending(waiting))
    assert.deepEqual(waiting.missing_subtasks, ['st_2'])

    await scout.fanouts.submitResult(fanout.fanout_id, workerResult('st_2', 'https://psp.example/refunds/42'))
    const reconciled = await scout.fanouts.reconcile(fanout.fanout_id)
    assert.ok(!isReconcilePending(reconciled))
    assert.equal(reconciled.manifest.verdict, 'RECONCILED')
    assert.equal(reconciled.manifest.directive, 'PROCEED')
    assert.deepEqual(
      reconciled.manifest.facts.map((fact) => [fact.fact, fact.status]),
      [[FACT, 'agreed']],
    )
    const verified = await dashboard.manifests.verify(reconciled)
    assert.equal(verified.manifestDigest, reconciled.manifest_digest)
    assert.deepEqual(
      signedPart(await scout.fanouts.reconcile(fanout.fanout_id, { close: true })),
      signedPart(reconciled),
      'unchanged inputs give the same manifest',
    )

    const read = await dashboard.fanouts.get(fanout.fanout_id)
    assert.equal(read.status, 'decided')
    assert.equal(read.manifest_id, reconciled.manifest.manifest_id)
    const listed = []
    for await (const item of paginate(dashboard.fanouts.list, { orchestrator_id: 'scout', limit: '1' })) {
      listed.push(item.fanout_id)
    }
    assert.deepEqual(listed, [fanout.fanout_id])
  })

  it('raises the service’s problem for a result after the decision and for another orchestrator’s fan-out', async () => {
    const fanout = await scout.fanouts.create({
      orchestrator_id: 'scout',
      fanout_key: 'refund-43',
      question: 'How much was refunded?',
      facts: [FACT],
      subtasks: [{ subtask_id: 'st_1', facts: [FACT] }],
    })
    await scout.fanouts.submitResult(fanout.fanout_id, workerResult('st_1', 'ledger://refunds/43'))
    const decided = await scout.fanouts.reconcile(fanout.fanout_id)
    assert.ok(!isReconcilePending(decided))
    await assert.rejects(
      scout.fanouts.submitResult(fanout.fanout_id, workerResult('st_1', 'ledger://refunds/43-bis')),
      (err: unknown) => {
        assert.ok(err instanceof ArbiterError)
        assert.equal(err.status, 409)
        assert.equal(err.manifestId, decided.manifest.manifest_id)
        return true
      },
    )
    await assert.rejects(other.fanouts.reconcile(fanout.fanout_id), (err: unknown) => {
      assert.ok(err instanceof ArbiterError)
      assert.equal(err.status, 403)
      return true
    })
  })
})

describe('a review through the client', () => {
  const body: CreateReviewBody = {
    orchestrator_id: 'scout',
    review_key: 'PR-7',
    mode: 'do_and_judge',
    subject: { digest: `sha256:${'ab'.repeat(32)}`, description: 'retry the refund once' },
    implementer: { model: 'model-m', context_id: 'ctx-impl' },
    judges: [{ judge_id: 'solo', model: 'model-j', context_id: 'ctx-judge' }],
  }

  it('creates it, records the verdict, decides, verifies the manifest, and reads it back', async () => {
    const review = await scout.reviews.create(body)
    assert.equal(review.status, 'open')
    assert.equal(review.revision, 0)
    assert.deepEqual(await scout.reviews.create(body), review, 'the natural key gives the same review back')

    const waiting = await scout.reviews.decide(review.review_id)
    assert.ok(isDecidePending(waiting))
    assert.deepEqual(waiting.missing_judges, ['solo'])

    const verdict = {
      judge_id: 'solo',
      revision: 0,
      status: 'DONE_WITH_CONCERNS' as const,
      summary: 'The retry is bounded.',
      evidence: ['test refund_retry_once passes'],
      concerns: ['no test for a timeout during the retry'],
    }
    const recorded = await scout.reviews.submitVerdict(review.review_id, verdict)
    assert.deepEqual(await scout.reviews.submitVerdict(review.review_id, verdict), recorded)

    const decided = await scout.reviews.decide(review.review_id)
    assert.ok(!isDecidePending(decided))
    assert.equal(decided.manifest.verdict, 'DONE_WITH_CONCERNS')
    assert.equal(decided.manifest.directive, 'APPLY')
    assert.equal((await dashboard.manifests.verify(decided)).manifestDigest, decided.manifest_digest)
    assert.deepEqual(
      signedPart(await scout.reviews.decide(review.review_id)),
      signedPart(decided),
      'the same verdicts, the same manifest',
    )

    const read = await dashboard.reviews.get(review.review_id)
    assert.equal(read.status, 'decided')
    assert.equal(read.manifest_id, decided.manifest.manifest_id)
    assert.deepEqual(
      (await dashboard.reviews.list({ orchestrator_id: 'scout' })).items.map((item) => item.review_id),
      [review.review_id],
    )
  })

  it('raises the service’s problem for an unknown judge and for a revision before any REVISE', async () => {
    const review = await scout.reviews.create({ ...body, review_key: 'PR-8' })
    await assert.rejects(
      scout.reviews.submitVerdict(review.review_id, {
        judge_id: 'nobody',
        revision: 0,
        status: 'BLOCKED',
        summary: 'no',
        blocking_reason: 'who am I',
      }),
      (err: unknown) => {
        assert.ok(err instanceof ArbiterError)
        assert.equal(err.status, 422)
        return true
      },
    )
    // A revision is only allowed after a REVISE manifest.
    const revised = { digest: `sha256:${'cd'.repeat(32)}`, description: 'retry the refund twice' }
    await assert.rejects(scout.reviews.revise(review.review_id, { subject: revised }), (err: unknown) => {
      assert.ok(err instanceof ArbiterError)
      assert.equal(err.status, 409)
      return true
    })
  })
})
