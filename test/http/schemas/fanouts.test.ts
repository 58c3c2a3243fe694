import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { z } from 'zod'
import * as examples from '../../../src/cases/fanout/examples.ts'
import {
  type CreateFanoutBody,
  createFanoutBody,
  fanoutPendingSchema,
  fanoutResolutionBody,
  fanoutResultBody,
  fanoutSchema,
  reconcileFanoutBody,
  reconciliationEnvelopeSchema,
  resultAnswerSchema,
} from '../../../src/cases/fanout/schemas.ts'
import { withPolicyDefaults } from '../../../src/domain/fanout/vocabulary.ts'
import { canonicalJson, hashJson } from '../../../src/domain/shared/canonical-json.ts'
import { bodyErrors, parsed } from './body-errors.ts'

const EXAMPLE = {
  orchestrator_id: 'scout',
  fanout_key: 'vantage-pricing-2026-11',
  question: 'How did Vantage change enterprise pricing over the last 18 months?',
  facts: ['vantage.enterprise.floor', 'vantage.partner.discount'],
  subtasks: [
    { subtask_id: 'st_3', scope: 'archived pricing pages, vantage.com', facts: ['vantage.enterprise.floor'] },
    {
      subtask_id: 'st_5',
      scope: 'CRM call notes, competitive-loss field',
      facts: ['vantage.enterprise.floor'],
    },
  ],
  deadline: '2026-11-30T18:00:00Z',
  policy: {
    resolve: ['source_priority', 'corroboration'],
    source_priority: ['https://vantage.com/', 'crm://'],
    min_independent_sources: 1,
    on_qualifier_difference: 'halt',
    on_incomplete: 'halt',
    decomposition: 'warn',
  },
}

const errors = (body: unknown) => bodyErrors(createFanoutBody, body)
const withChange = (change: Record<string, unknown>) => ({ ...EXAMPLE, ...change })
const withPolicy = (policy: Record<string, unknown>) => withChange({ policy })

describe('POST /v1/fanouts body', () => {
  it('accepts the Vantage example', () => {
    assert.equal(errors(EXAMPLE), null)
  })

  it('accepts the minimum: no deadline, no policy, a subtask owning nothing, no scope', () => {
    const body = { ...EXAMPLE, subtasks: [{ subtask_id: 's', facts: [] }] } as Record<string, unknown>
    delete body.deadline
    delete body.policy
    assert.equal(errors(body), null)
  })

  it('accepts a deadline in the past, and null', () => {
    assert.equal(errors(withChange({ deadline: '2001-01-01T00:00:00Z' })), null)
    assert.equal(errors(withChange({ deadline: null })), null)
  })

  for (const key of ['orchestrator_id', 'fanout_key', 'question', 'facts', 'subtasks']) {
    it(`requires ${key}`, () => {
      const body: Record<string, unknown> = { ...EXAMPLE }
      delete body[key]
      assert.deepEqual(errors(body), [{ path: `body/${key}`, message: 'required' }])
    })
  }

  const factCases: [string, unknown, string, string][] = [
    ['no facts', [], 'body/facts', 'at least one fact'],
    ['201 facts', Array.from({ length: 201 }, (_, i) => `f${i}`), 'body/facts', 'at most 200 facts'],
    [
      'a fact with a space',
      ['ok', 'not ok'],
      'body/facts/1',
      'must be 1–200 characters of A–Z, a–z, 0–9 and _ . : / -',
    ],
    ['an empty fact', [''], 'body/facts/0', 'must be 1–200 characters of A–Z, a–z, 0–9 and _ . : / -'],
    [
      'a fact of 201 characters',
      ['f'.repeat(201)],
      'body/facts/0',
      'must be 1–200 characters of A–Z, a–z, 0–9 and _ . : / -',
    ],
  ]
  for (const [name, facts, path, message] of factCases) {
    it(`refuses ${name}`, () => {
      assert.deepEqual(errors(withChange({ facts, subtasks: [{ subtask_id: 's', facts: [] }] })), [
        { path, message },
      ])
    })
  }

  it('accepts every character a fact key may hold', () => {
    const facts = ['A-Za-z0-9_.:/-', 'f'.repeat(200)]
    assert.equal(errors(withChange({ facts, subtasks: [{ subtask_id: 's', facts }] })), null)
  })

  it('refuses a fact listed twice, at the repeat', () => {
    const body = withChange({ facts: ['a', 'b', 'a'], subtasks: [{ subtask_id: 's', facts: ['a'] }] })
    assert.deepEqual(errors(body), [{ path: 'body/facts/2', message: 'this fact is already listed' }])
  })

  const subtaskCases: [string, unknown, string, string][] = [
    ['no subtasks', [], 'body/subtasks', 'at least one subtask'],
    [
      '101 subtasks',
      Array.from({ length: 101 }, (_, i) => ({ subtask_id: `s${i}`, facts: [] })),
      'body/subtasks',
      'at most 100 subtasks',
    ],
    [
      'a subtask id with #',
      [{ subtask_id: 'st#3', facts: [] }],
      'body/subtasks/0/subtask_id',
      'must be 1–100 characters of A–Z, a–z, 0–9 and _ . : -',
    ],
    [
      'a subtask id with /',
      [{ subtask_id: 'st/3', facts: [] }],
      'body/subtasks/0/subtask_id',
      'must be 1–100 characters of A–Z, a–z, 0–9 and _ . : -',
    ],
    ['a subtask without facts', [{ subtask_id: 's' }], 'body/subtasks/0/facts', 'required'],
    [
      'a subtask with an unknown key',
      [{ subtask_id: 's', facts: [], owner: 'x' }],
      'body/subtasks/0/owner',
      'unknown field',
    ],
    [
      'a subtask id used twice',
      [
        { subtask_id: 's', facts: [] },
        { subtask_id: 's', facts: [] },
      ],
      'body/subtasks/1/subtask_id',
      'this subtask id is already used',
    ],
    [
      'a subtask owning a fact the fan-out does not list',
      [{ subtask_id: 's', facts: ['vantage.enterprise.floor', 'vantage.other'] }],
      'body/subtasks/0/facts/1',
      'not one of the fan-out’s facts',
    ],
    [
      'a subtask listing a fact twice',
      [{ subtask_id: 's', facts: ['vantage.enterprise.floor', 'vantage.enterprise.floor'] }],
      'body/subtasks/0/facts/1',
      'this subtask already lists this fact',
    ],
  ]
  for (const [name, subtasks, path, message] of subtaskCases) {
    it(`refuses ${name}`, () => {
      assert.deepEqual(errors(withChange({ subtasks })), [{ path, message }])
    })
  }

  it('refuses a bad fanout_key, a blank question and a bad deadline', () => {
    assert.deepEqual(errors(withChange({ fanout_key: 'vantage pricing' })), [
      { path: 'body/fanout_key', message: 'must be 1–200 characters of A–Z, a–z, 0–9 and _ . : / -' },
    ])
    assert.deepEqual(errors(withChange({ question: '  ' })), [
      { path: 'body/question', message: 'must not be empty' },
    ])
    assert.deepEqual(errors(withChange({ deadline: '2026-11-30' })), [
      { path: 'body/deadline', message: 'must be an RFC 3339 date-time' },
    ])
  })

  it('refuses unknown top-level members', () => {
    assert.deepEqual(errors(withChange({ results: [] })), [
      { path: 'body/results', message: 'unknown field' },
    ])
  })

  const policyCases: [string, Record<string, unknown>, string, string][] = [
    [
      'an unknown rule',
      { resolve: ['corroboration', 'majority'] },
      'body/policy/resolve/1',
      'must be one of corroboration, source_priority, most_recent_source, highest_confidence',
    ],
    [
      'a rule listed twice',
      { resolve: ['corroboration', 'corroboration'] },
      'body/policy/resolve/1',
      'this rule is already listed',
    ],
    [
      'a prefix listed twice',
      { source_priority: ['crm://', 'crm://'] },
      'body/policy/source_priority/1',
      'this prefix is already listed',
    ],
    ['an empty prefix', { source_priority: [''] }, 'body/policy/source_priority/0', 'must not be empty'],
    [
      'min_independent_sources 0',
      { min_independent_sources: 0 },
      'body/policy/min_independent_sources',
      'must be at least 1',
    ],
    [
      'min_independent_sources 1.5',
      { min_independent_sources: 1.5 },
      'body/policy/min_independent_sources',
      'must be an integer',
    ],
    [
      'on_qualifier_difference merge',
      { on_qualifier_difference: 'merge' },
      'body/policy/on_qualifier_difference',
      'must be one of halt, keep_all',
    ],
    [
      'on_incomplete ignore',
      { on_incomplete: 'ignore' },
      'body/policy/on_incomplete',
      'must be one of halt, proceed',
    ],
    [
      'decomposition lenient',
      { decomposition: 'lenient' },
      'body/policy/decomposition',
      'must be one of warn, strict',
    ],
    ['an unknown policy member', { tie_break: 'first' }, 'body/policy/tie_break', 'unknown field'],
  ]
  for (const [name, policy, path, message] of policyCases) {
    it(`refuses a policy with ${name}`, () => {
      assert.deepEqual(errors(withPolicy(policy)), [{ path, message }])
    })
  }

  it('accepts every policy member left out, and an empty policy', () => {
    assert.equal(errors(withPolicy({})), null)
    assert.equal(errors(withPolicy({ on_qualifier_difference: 'keep_all', decomposition: 'strict' })), null)
  })

  it('leaves defaults to withPolicyDefaults: an empty policy and the written-out defaults hash alike', () => {
    const empty = parsed(createFanoutBody, withPolicy({})) as CreateFanoutBody
    assert.deepEqual(empty.policy, {})
    const explicit = parsed(
      createFanoutBody,
      withPolicy({
        resolve: [],
        source_priority: [],
        min_independent_sources: 1,
        on_qualifier_difference: 'halt',
        on_incomplete: 'halt',
        decomposition: 'warn',
      }),
    ) as CreateFanoutBody
    assert.equal(hashJson(withPolicyDefaults(empty.policy)), hashJson(withPolicyDefaults(explicit.policy)))
  })

  it('does not transform the body', () => {
    assert.equal(canonicalJson(parsed(createFanoutBody, EXAMPLE)), canonicalJson(EXAMPLE))
  })
})

describe('POST /v1/fanouts/{id}/reconcile body', () => {
  it('takes no body, {}, or {"close": true}', () => {
    assert.equal(bodyErrors(reconcileFanoutBody, undefined), null)
    assert.equal(bodyErrors(reconcileFanoutBody, null), null, 'a request without a body')
    assert.equal(bodyErrors(reconcileFanoutBody, {}), null)
    assert.equal(bodyErrors(reconcileFanoutBody, { close: true }), null)
  })

  it('refuses other members and a close that is not a boolean', () => {
    assert.deepEqual(bodyErrors(reconcileFanoutBody, { close: true, force: true }), [
      { path: 'body/force', message: 'unknown field' },
    ])
    assert.deepEqual(bodyErrors(reconcileFanoutBody, { close: 'yes' }), [
      { path: 'body/close', message: 'must be true or false' },
    ])
  })
})

describe('POST /v1/fanouts/{id}/resolution body', () => {
  const answer = {
    value: { amount: 60000 },
    effective_date: '2025-01-22',
    qualifiers: { applies_to: 'new_logos' },
  }
  const resolutionErrors = (body: unknown) => bodyErrors(fanoutResolutionBody, body)

  it('takes answers, null answers, and no facts at all', () => {
    const body = {
      facts: [
        { fact: 'a', answer },
        { fact: 'b', answer: null },
        { fact: 'c', answer: { value: 1 } },
      ],
      rationale: 'the CRM note is first-hand',
    }
    assert.equal(resolutionErrors(body), null)
    assert.equal(resolutionErrors({ facts: [], rationale: 'nothing contested' }), null)
  })

  it('requires an answer key on every item (null for no answer)', () => {
    assert.deepEqual(resolutionErrors({ facts: [{ fact: 'a' }], rationale: 'r' }), [
      { path: 'body/facts/0/answer', message: 'required' },
    ])
    assert.deepEqual(resolutionErrors({ facts: [{ fact: 'a', answer: 60000 }], rationale: 'r' }), [
      { path: 'body/facts/0/answer', message: 'must be an answer object or null' },
    ])
  })

  it('refuses a null value, a bad date and unknown answer members', () => {
    const bad = { value: null, effective_date: '2025-02-30', rule: 'human' }
    assert.deepEqual(resolutionErrors({ facts: [{ fact: 'a', answer: bad }], rationale: 'r' }), [
      { path: 'body/facts/0/answer/value', message: 'must not be null' },
      {
        path: 'body/facts/0/answer/effective_date',
        message: 'must be a date YYYY-MM-DD that exists in the calendar',
      },
      { path: 'body/facts/0/answer/rule', message: 'unknown field' },
    ])
  })

  it('requires a non-empty rationale', () => {
    assert.deepEqual(resolutionErrors({ facts: [], rationale: ' ' }), [
      { path: 'body/rationale', message: 'must not be empty' },
    ])
    assert.deepEqual(resolutionErrors({ facts: [] }), [{ path: 'body/rationale', message: 'required' }])
  })
})

describe('bounds on a result', () => {
  const claim = { fact: 'f', value: 1, sources: [{ uri: 'https://a.example/' }] }
  const result = (claims: unknown[]) => ({
    subtask_id: 's',
    status: 'DONE',
    summary: 'done',
    evidence: ['e'],
    claims,
  })
  const errorsOf = (claims: unknown[]) => bodyErrors(fanoutResultBody, result(claims))

  it('leaves counts and qualifier lengths to the limits, which the service checks after ownership (422)', () => {
    // test/http/fanout-limits.test.ts holds the 422s; the schema itself takes any count.
    const qualifiers = Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [`q${i}`.repeat(30), 'x'.repeat(2000)]),
    )
    const sources = Array.from({ length: 101 }, (_, i) => ({ uri: `https://a.example/${i}` }))
    assert.equal(errorsOf([{ ...claim, qualifiers, sources }]), null)
    assert.equal(errorsOf(Array.from({ length: 1001 }, () => claim)), null)
  })

  const cases: [string, unknown[], string, string][] = [
    [
      'an excerpt of 10,001 characters',
      [{ ...claim, sources: [{ uri: 'x', excerpt: 'e'.repeat(10_001) }] }],
      'body/claims/0/sources/0/excerpt',
      'at most 10000 characters',
    ],
  ]
  for (const [label, claims, path, message] of cases) {
    it(`refuses ${label} at ${path}`, () => {
      assert.deepEqual(errorsOf(claims), [{ path, message }])
    })
  }

  it('refuses an unnamed qualifier', () => {
    const errors = errorsOf([{ ...claim, qualifiers: { '': 'x' } }])
    assert.equal(errors?.length, 1)
    assert.match(errors![0]!.path, /^body\/claims\/0\/qualifiers/)
  })
})

describe('the OpenAPI examples of fan-outs', () => {
  it('are valid requests and answers of their routes', () => {
    assert.equal(bodyErrors(createFanoutBody, examples.createFanoutExample), null)
    for (const result of examples.resultExamples) assert.equal(bodyErrors(fanoutResultBody, result), null)
    assert.equal(bodyErrors(fanoutResolutionBody, examples.resolutionExample), null)
    const answers: [z.ZodType, unknown][] = [
      [fanoutSchema, examples.fanoutViewExample],
      [resultAnswerSchema, examples.resultAnswerExample],
      [fanoutPendingSchema, examples.pendingExample],
      [reconciliationEnvelopeSchema, examples.haltEnvelopeExample],
      [reconciliationEnvelopeSchema, examples.resolvedEnvelopeExample],
    ]
    for (const [schema, example] of answers) assert.equal(bodyErrors(schema, example), null)
  })

  it('show the Vantage floor contested for its carve-out, then resolved by a person', () => {
    const [halt] = examples.haltEnvelopeExample.manifest.facts
    assert.equal(halt?.status, 'contested')
    assert.equal(halt?.reason, 'qualifier_difference')
    assert.deepEqual(halt?.conflicts[0]?.qualifier_differences, [{ pointer: '/applies_to', a: 'new_logos' }])
    assert.equal(examples.resolvedEnvelopeExample.manifest.facts[0]?.rule, 'human')
    assert.equal(
      examples.resolvedEnvelopeExample.manifest.supersedes,
      examples.haltEnvelopeExample.manifest.manifest_id,
    )
  })
})
