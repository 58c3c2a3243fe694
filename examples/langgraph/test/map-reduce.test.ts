import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { type CreateFanoutBody, createArbiterClient } from '@arbiter/client'
import { Command } from '@langchain/langgraph'
import { listenTestApp } from '../../../test/helpers/listening-app.ts'
import {
  buildMapReduceGraph,
  type ContestedPause,
  type Subtask,
  type Worker,
} from '../src/map-reduce-graph.ts'

/*
 * A LangGraph map-reduce whose workers' claims Arbiter reconciles before the reduce step, against a live Arbiter
 * (PostgreSQL at TEST_DATABASE_URL, else the embedded database) over HTTP. The workers are plain functions.
 */

const arbiter = await listenTestApp({ after })
const scout = createArbiterClient({
  baseUrl: arbiter.baseUrl,
  apiKey: await arbiter.key('orchestrator', ['scout']),
})
const ops = createArbiterClient({ baseUrl: arbiter.baseUrl, apiKey: await arbiter.key('ops') })

/**
 * Five workers on "what is refund 42 worth, and how long may it be claimed?". Two of the three on the amount cite
 * the same ledger entry (the CRM note copied it): an echo, one source, not two. The support worker found a
 * carve-out the policy page does not mention: the window for enterprise customers.
 */
const worker: Worker = (subtask: Subtask) => {
  const done = (summary: string, fact: string, value: unknown, uri: string, qualifiers = {}) => ({
    status: 'DONE' as const,
    summary,
    evidence: [uri],
    claims: [{ fact, value, qualifiers, sources: [{ uri }] }],
  })
  switch (subtask.subtask_id) {
    case 'ledger':
      return done('the ledger entry', 'refund.amount', 42, 'ledger://refunds/42')
    case 'crm':
      return done('the CRM note, copied from the ledger', 'refund.amount', 42, 'ledger://refunds/42')
    case 'billing':
      return done(
        'the invoice after the partial credit',
        'refund.amount',
        40,
        'https://billing.example.com/inv/42',
      )
    case 'policy':
      return done('the public refund policy', 'refund.window_days', 30, 'https://example.com/refunds')
    case 'support':
      return done('a support ticket', 'refund.window_days', 30, 'crm://tickets/881', { tier: 'enterprise' })
    default:
      throw new Error(`no worker for ${subtask.subtask_id}`)
  }
}

function fanout(key: string, onQualifierDifference: 'keep_all' | 'halt'): CreateFanoutBody {
  return {
    orchestrator_id: 'scout',
    fanout_key: key,
    question: 'What is refund 42 worth, and how many days may it be claimed?',
    facts: ['refund.amount', 'refund.window_days'],
    subtasks: [
      { subtask_id: 'ledger', facts: ['refund.amount'] },
      { subtask_id: 'crm', facts: ['refund.amount'] },
      { subtask_id: 'billing', facts: ['refund.amount'] },
      { subtask_id: 'policy', facts: ['refund.window_days'] },
      { subtask_id: 'support', facts: ['refund.window_days'] },
    ],
    policy: {
      resolve: ['corroboration', 'source_priority'],
      source_priority: ['https://billing.example.com/'],
      on_qualifier_difference: onQualifierDifference,
    },
  }
}

describe('a LangGraph map-reduce reconciled by an Arbiter fan-out', () => {
  it('fans out with Send and reduces with the reconciliation manifest: an echo discounted, a carve-out kept', async () => {
    const graph = buildMapReduceGraph({ arbiter: scout, worker })
    const thread = { configurable: { thread_id: 'mr-1' } }
    const state = await graph.invoke({ fanout: fanout('refund-42-keep-all', 'keep_all') }, thread)

    assert.deepEqual([...state.returned].sort(), ['billing', 'crm', 'ledger', 'policy', 'support'])
    const manifest = state.manifest!
    assert.equal(manifest.verdict, 'RECONCILED')
    const amount = manifest.facts.find((fact) => fact.fact === 'refund.amount')!
    assert.deepEqual(
      amount.echoes.map((echo) => echo.source),
      ['ledger://refunds/42'],
      'two workers, one source',
    )
    const [p40, p42] = amount.positions
    assert.equal(p42?.claims.length, 2)
    assert.equal(p42?.independent_sources, 1, 'the echo counts once')
    assert.equal(amount.rule, 'source_priority', 'a tie on corroboration, settled by the policy')
    assert.equal(p40?.lost_by, null)
    assert.equal(p42?.lost_by, 'source_priority')
    const window = manifest.facts.find((fact) => fact.fact === 'refund.window_days')!
    assert.equal(window.status, 'scoped')
    // A carve-out: a qualifier on one side only (the other omits it).
    assert.deepEqual(window.conflicts[0]?.qualifier_differences, [{ pointer: '/tier', a: 'enterprise' }])

    // A majority vote over the workers' returns would say 42; the reduce step says what Arbiter decided.
    assert.deepEqual(state.report, {
      'refund.amount': 40,
      'refund.window_days': [
        { qualifiers: { tier: 'enterprise' }, value: 30 },
        { qualifiers: {}, value: 30 },
      ],
    })
  })

  it('pauses on CONTESTED until ops answer the contested fact, then reduces with their answer', async () => {
    const graph = buildMapReduceGraph({ arbiter: scout, worker })
    const thread = { configurable: { thread_id: 'mr-2' } }
    await graph.invoke({ fanout: fanout('refund-42-halt', 'halt') }, thread)

    const paused = await graph.getState(thread)
    assert.deepEqual(paused.next, ['await_ops'])
    const pause = paused.tasks[0]?.interrupts[0]?.value as ContestedPause
    assert.equal(pause.verdict, 'CONTESTED')
    assert.deepEqual(pause.contested, ['refund.window_days'])
    assert.equal(paused.values.report, null, 'no reduce before the contested fact is answered')

    await ops.fanouts.resolve(pause.fanout_id, {
      facts: [{ fact: 'refund.window_days', answer: { value: 60, effective_date: null, qualifiers: {} } }],
      rationale: 'enterprise contracts grant 60 days; the public page is out of date',
    })
    const state = await graph.invoke(new Command({ resume: 'answered' }), thread)
    assert.equal(state.manifest?.verdict, 'HUMAN_RESOLVED')
    assert.equal(state.manifest?.supersedes, pause.manifest_id)
    assert.deepEqual(state.report, { 'refund.amount': 40, 'refund.window_days': 60 })
  })
})
