import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { z } from 'zod'
import { type FanoutResultBody, fanoutResultBody } from '../../../src/cases/fanout/schemas.ts'
import type { SubmittedClaim } from '../../../src/domain/fanout/claims.ts'
import { canonicalJson } from '../../../src/domain/shared/canonical-json.ts'
import { REPORT_STATUSES } from '../../../src/domain/status-report.ts'
import { statusReportSchema } from '../../../src/http/schemas/status-report.ts'
import { bodyErrors, parsed } from './body-errors.ts'

const CLAIM = {
  fact: 'vantage.enterprise.floor',
  value: { amount: 60000, currency: 'USD', per: 'year' },
  effective_date: '2025-01-22',
  qualifiers: { applies_to: 'new_logos' },
  confidence: 0.66,
  sources: [{ uri: 'crm://opp/118204', excerpt: 'their AE confirmed 60k floor, new business only' }],
}

/** A minimal valid fan-out result of each status. */
const VALID = {
  DONE: { subtask_id: 'st_5', status: 'DONE', summary: 'found it', evidence: ['opp 118204 note'] },
  DONE_WITH_CONCERNS: {
    subtask_id: 'st_5',
    status: 'DONE_WITH_CONCERNS',
    summary: 'found it',
    evidence: [{ any: 'json' }],
    concerns: ['one rep only'],
  },
  NEEDS_CONTEXT: {
    subtask_id: 'st_5',
    status: 'NEEDS_CONTEXT',
    summary: 'stuck',
    blocking_question: 'which region?',
  },
  BLOCKED: { subtask_id: 'st_5', status: 'BLOCKED', summary: 'stuck', blocking_reason: 'CRM is down' },
} as const

/** The key each status requires, and the statuses that allow it. */
const OWN_KEYS: Record<string, { value: unknown; allowedWith: string }> = {
  evidence: { value: ['x'], allowedWith: 'DONE or DONE_WITH_CONCERNS' },
  concerns: { value: ['x'], allowedWith: 'DONE_WITH_CONCERNS' },
  blocking_question: { value: 'q?', allowedWith: 'NEEDS_CONTEXT' },
  blocking_reason: { value: 'down', allowedWith: 'BLOCKED' },
  claims: { value: [], allowedWith: 'DONE or DONE_WITH_CONCERNS' },
}
const ALLOWED: Record<string, string[]> = {
  DONE: ['evidence', 'claims'],
  DONE_WITH_CONCERNS: ['evidence', 'concerns', 'claims'],
  NEEDS_CONTEXT: ['blocking_question'],
  BLOCKED: ['blocking_reason'],
}

describe('the status report (fan-out results)', () => {
  for (const status of REPORT_STATUSES) {
    it(`accepts a minimal ${status}`, () => {
      assert.equal(bodyErrors(fanoutResultBody, VALID[status]), null)
    })
  }

  it('accepts the full DONE example, claims and worker included', () => {
    const body = { ...VALID.DONE, claims: [CLAIM], worker: { model: 'model-x', context_id: 'ctx-5' } }
    assert.equal(bodyErrors(fanoutResultBody, body), null)
  })

  it('does not transform the body: what validates is what was submitted', () => {
    const body = { ...VALID.DONE, claims: [{ fact: 'f', value: 1, sources: [{ uri: ' crm://x ' }] }] }
    assert.equal(canonicalJson(parsed(fanoutResultBody, body)), canonicalJson(body))
  })

  it('refuses a missing status at /status', () => {
    const { status: _, ...body } = VALID.DONE
    assert.deepEqual(bodyErrors(fanoutResultBody, body), [
      { path: 'body/status', message: 'required: one of DONE, DONE_WITH_CONCERNS, NEEDS_CONTEXT, BLOCKED' },
    ])
  })

  it('refuses an unknown status at /status', () => {
    assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.DONE, status: 'done' }), [
      { path: 'body/status', message: 'must be one of DONE, DONE_WITH_CONCERNS, NEEDS_CONTEXT, BLOCKED' },
    ])
  })

  it('refuses a body that is not an object', () => {
    assert.equal(bodyErrors(fanoutResultBody, [VALID.DONE])?.[0]?.path, 'body')
  })

  const requiredCases: [keyof typeof VALID, string, string][] = [
    ['DONE', 'evidence', 'required when status is DONE'],
    ['DONE_WITH_CONCERNS', 'evidence', 'required when status is DONE_WITH_CONCERNS'],
    ['DONE_WITH_CONCERNS', 'concerns', 'required when status is DONE_WITH_CONCERNS'],
    ['NEEDS_CONTEXT', 'blocking_question', 'required when status is NEEDS_CONTEXT'],
    ['BLOCKED', 'blocking_reason', 'required when status is BLOCKED'],
    ['DONE', 'summary', 'required'],
    ['BLOCKED', 'summary', 'required'],
    ['DONE', 'subtask_id', 'required'],
  ]
  for (const [status, key, message] of requiredCases) {
    it(`${status} requires ${key}`, () => {
      const body: Record<string, unknown> = { ...VALID[status] }
      delete body[key]
      assert.deepEqual(bodyErrors(fanoutResultBody, body), [{ path: `body/${key}`, message }])
    })
  }

  for (const status of REPORT_STATUSES) {
    for (const [key, { value, allowedWith }] of Object.entries(OWN_KEYS)) {
      if (ALLOWED[status]!.includes(key)) continue
      for (const given of [value, null]) {
        it(`${status} refuses ${key} = ${JSON.stringify(given)} (it belongs to ${allowedWith})`, () => {
          assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID[status], [key]: given }), [
            { path: `body/${key}`, message: `allowed only when status is ${allowedWith}` },
          ])
        })
      }
    }
  }

  it('refuses unknown keys, one error each at its own path', () => {
    assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.BLOCKED, extra: 1, other: null }), [
      { path: 'body/extra', message: 'unknown field' },
      { path: 'body/other', message: 'unknown field' },
    ])
  })

  it('refuses unknown keys nested in claims and sources', () => {
    const claim = { ...CLAIM, sources: [{ uri: 'crm://x', rank: 1 }], note: 'x' }
    assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.DONE, claims: [claim] }), [
      { path: 'body/claims/0/sources/0/rank', message: 'unknown field' },
      { path: 'body/claims/0/note', message: 'unknown field' },
    ])
  })

  const textCases: [string, unknown, string][] = [
    ['blank', '   ', 'must not be empty'],
    ['empty', '', 'must not be empty'],
    ['too long', 'x'.repeat(4001), 'at most 4000 characters'],
    ['not a string', 42, 'must be a string'],
  ]
  for (const [name, value, message] of textCases) {
    it(`refuses a ${name} summary, blocking_question and blocking_reason`, () => {
      assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.DONE, summary: value }), [
        { path: 'body/summary', message },
      ])
      assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.NEEDS_CONTEXT, blocking_question: value }), [
        { path: 'body/blocking_question', message },
      ])
      assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.BLOCKED, blocking_reason: value }), [
        { path: 'body/blocking_reason', message },
      ])
    })
  }

  it('accepts summaries of exactly 4000 characters', () => {
    assert.equal(bodyErrors(fanoutResultBody, { ...VALID.DONE, summary: 'x'.repeat(4000) }), null)
  })

  it('requires at least one evidence item, of any JSON', () => {
    assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.DONE, evidence: [] }), [
      { path: 'body/evidence', message: 'at least one evidence item' },
    ])
    assert.equal(bodyErrors(fanoutResultBody, { ...VALID.DONE, evidence: [null, 0, false, [], {}] }), null)
    assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID.DONE, evidence: 'opp note' }), [
      { path: 'body/evidence', message: 'must be an array' },
    ])
  })

  it('requires 1–50 non-empty concerns', () => {
    const errors = (concerns: unknown) =>
      bodyErrors(fanoutResultBody, { ...VALID.DONE_WITH_CONCERNS, concerns })
    assert.deepEqual(errors([]), [{ path: 'body/concerns', message: 'at least one concern' }])
    assert.deepEqual(errors(['ok', ' ']), [{ path: 'body/concerns/1', message: 'must not be empty' }])
    assert.deepEqual(errors(Array(51).fill('c')), [{ path: 'body/concerns', message: 'at most 50 concerns' }])
    assert.equal(errors(Array(50).fill('c')), null)
  })

  it('allows claims to be left out, or empty, on DONE and DONE_WITH_CONCERNS', () => {
    assert.equal(bodyErrors(fanoutResultBody, { ...VALID.DONE, claims: [] }), null)
    assert.equal(bodyErrors(fanoutResultBody, { ...VALID.DONE_WITH_CONCERNS, claims: [CLAIM] }), null)
  })

  for (const status of REPORT_STATUSES) {
    it(`allows worker {model?, context_id?} on ${status}`, () => {
      assert.equal(bodyErrors(fanoutResultBody, { ...VALID[status], worker: {} }), null)
      assert.equal(
        bodyErrors(fanoutResultBody, { ...VALID[status], worker: { model: 'm', context_id: 'c' } }),
        null,
      )
      assert.deepEqual(bodyErrors(fanoutResultBody, { ...VALID[status], worker: { id: 'w' } }), [
        { path: 'body/worker/id', message: 'unknown field' },
      ])
    })
  }
})

describe('claims in a fan-out result', () => {
  const claimErrors = (claim: Record<string, unknown>) =>
    bodyErrors(fanoutResultBody, { ...VALID.DONE, claims: [claim] })
  const without = (key: string) => {
    const claim: Record<string, unknown> = { ...CLAIM }
    delete claim[key]
    return claim
  }

  it('accepts any JSON value but null', () => {
    for (const value of [0, '', false, [], {}, [null], { a: null }])
      assert.equal(claimErrors({ ...CLAIM, value }), null)
    assert.deepEqual(claimErrors({ ...CLAIM, value: null }), [
      { path: 'body/claims/0/value', message: 'must not be null' },
    ])
    assert.deepEqual(claimErrors(without('value')), [{ path: 'body/claims/0/value', message: 'required' }])
  })

  it('requires fact and sources', () => {
    assert.deepEqual(claimErrors(without('fact')), [{ path: 'body/claims/0/fact', message: 'required' }])
    assert.deepEqual(claimErrors(without('sources')), [
      { path: 'body/claims/0/sources', message: 'required' },
    ])
    assert.deepEqual(claimErrors({ ...CLAIM, sources: [] }), [
      { path: 'body/claims/0/sources', message: 'at least one source' },
    ])
  })

  it('allows effective_date, qualifiers and confidence to be left out, and the first and last to be null', () => {
    const minimal = { fact: 'f', value: 1, sources: [{ uri: 'crm://x' }] }
    assert.equal(claimErrors(minimal), null)
    assert.equal(claimErrors({ ...minimal, effective_date: null, confidence: null }), null)
  })

  const dates: [string, boolean][] = [
    ['2025-01-22', true],
    ['2024-02-29', true],
    ['2025-02-29', false],
    ['2025-04-31', false],
    ['2025-13-01', false],
    ['2025-1-22', false],
    ['2025-01-22T00:00:00Z', false],
    ['22/01/2025', false],
  ]
  for (const [date, valid] of dates) {
    it(`${valid ? 'accepts' : 'refuses'} effective_date ${date}`, () => {
      const errors = claimErrors({ ...CLAIM, effective_date: date })
      if (valid) assert.equal(errors, null)
      else
        assert.deepEqual(errors, [
          {
            path: 'body/claims/0/effective_date',
            message: 'must be a date YYYY-MM-DD that exists in the calendar',
          },
        ])
    })
  }

  it('takes qualifiers of string, number or boolean values only', () => {
    assert.equal(claimErrors({ ...CLAIM, qualifiers: { a: 'x', b: 2, c: true } }), null)
    for (const bad of [null, {}, [], ['x']]) {
      assert.deepEqual(claimErrors({ ...CLAIM, qualifiers: { applies_to: bad } }), [
        { path: 'body/claims/0/qualifiers/applies_to', message: 'must be a string, number or boolean' },
      ])
    }
    assert.deepEqual(claimErrors({ ...CLAIM, qualifiers: ['new_logos'] }), [
      { path: 'body/claims/0/qualifiers', message: 'must be an object of string, number or boolean values' },
    ])
  })

  it('takes confidence in [0, 1]', () => {
    for (const confidence of [0, 0.5, 1]) assert.equal(claimErrors({ ...CLAIM, confidence }), null)
    for (const confidence of [-0.01, 1.01]) {
      assert.deepEqual(claimErrors({ ...CLAIM, confidence }), [
        { path: 'body/claims/0/confidence', message: 'must be between 0 and 1' },
      ])
    }
  })

  const sourceCases: [string, Record<string, unknown>, string | null, string | null][] = [
    ['a uri of 2000 characters', { uri: 'x'.repeat(2000) }, null, null],
    ['a uri of 2001 characters', { uri: 'x'.repeat(2001) }, 'uri', 'at most 2000 characters'],
    ['an empty uri', { uri: '' }, 'uri', 'must not be empty'],
    ['no uri', { excerpt: 'x' }, 'uri', 'required'],
    ['a lowercase digest', { uri: 'crm://x', content_digest: `sha256:${'a'.repeat(64)}` }, null, null],
    [
      'an uppercase digest',
      { uri: 'crm://x', content_digest: `sha256:${'A'.repeat(64)}` },
      'content_digest',
      'must be sha256:<64 lowercase hex>',
    ],
    [
      'a short digest',
      { uri: 'crm://x', content_digest: 'sha256:abc' },
      'content_digest',
      'must be sha256:<64 lowercase hex>',
    ],
    ['an RFC 3339 observed_at', { uri: 'crm://x', observed_at: '2025-03-04T09:12:00+01:00' }, null, null],
    [
      'a date as observed_at',
      { uri: 'crm://x', observed_at: '2025-03-04' },
      'observed_at',
      'must be an RFC 3339 date-time',
    ],
    [
      'null optional members',
      { uri: 'crm://x', excerpt: null, content_digest: null, observed_at: null },
      null,
      null,
    ],
  ]
  for (const [name, source, key, message] of sourceCases) {
    it(`${key === null ? 'accepts' : 'refuses'} a source with ${name}`, () => {
      const errors = claimErrors({ ...CLAIM, sources: [{ uri: 'crm://ok' }, source] })
      if (key === null) assert.equal(errors, null)
      else assert.deepEqual(errors, [{ path: `body/claims/0/sources/1/${key}`, message }])
    })
  }
})

describe('statusReportSchema for another use (review verdicts)', () => {
  const verdictBody = statusReportSchema({
    every: { judge_id: z.string(), revision: z.int().min(0) },
    withEvidence: {},
  })

  it('adds the use’s members to every status', () => {
    for (const status of REPORT_STATUSES) {
      const { subtask_id: _, ...report } = VALID[status]
      assert.equal(bodyErrors(verdictBody, { ...report, judge_id: 'j1', revision: 0 }), null)
      assert.deepEqual(bodyErrors(verdictBody, { ...report, judge_id: 'j1' })?.[0]?.path, 'body/revision')
    }
  })

  it('refuses the fan-out’s members', () => {
    const { subtask_id: _, ...report } = VALID.DONE
    assert.deepEqual(bodyErrors(verdictBody, { ...report, judge_id: 'j1', revision: 1, claims: [] }), [
      { path: 'body/claims', message: 'unknown field' },
    ])
  })
})

describe('FanoutResultBody (types)', () => {
  it('narrows by status to the members that status carries', () => {
    // Compile-time: `tsc` fails if narrowing stops giving these types.
    const read = (body: FanoutResultBody): unknown[] => {
      switch (body.status) {
        case 'DONE':
          return [body.evidence, body.claims satisfies SubmittedClaim[] | undefined, body.worker?.model]
        case 'DONE_WITH_CONCERNS':
          return [body.concerns satisfies string[], body.claims]
        case 'NEEDS_CONTEXT':
          return [body.blocking_question satisfies string, body.claims satisfies undefined]
        case 'BLOCKED':
          return [body.blocking_reason satisfies string, body.subtask_id satisfies string]
      }
    }
    assert.deepEqual(read(parsed(fanoutResultBody, VALID.BLOCKED) as FanoutResultBody), [
      'CRM is down',
      'st_5',
    ])
  })
})
