/**
 * A halted fan-out and a decided council review exactly as the API contract shapes them, for rendering the
 * console's fan-out and review screens while this server does not serve those routes yet (the browser test
 * answers the console's requests with these).
 */
export const FANOUT_ID = '0b6f3c1e-8c1d-4f57-9a53-2f1c6b1d9e01'
export const FANOUT_HALT_ID = '6f1c1a52-3a0e-4a4f-8f5e-7b9f8d2c4a11'
export const REVIEW_ID = '9a7e4c2b-1d3f-4b6a-8e5c-0f2d4b6a8c13'
export const REVIEW_MANIFEST_ID = 'c3d5e7f9-1b2d-4f6a-8c0e-2a4c6e8a0c15'

const AT = '2026-11-30T12:00:00.000Z'
const FLOOR = { amount: 60000, currency: 'USD', per: 'year' }

const position = (
  id: string,
  qualifiers: Record<string, string>,
  claims: string[],
  lostBy: string | null,
) => ({
  position_id: id,
  value: FLOOR,
  effective_date: '2025-01-22',
  qualifiers,
  claims,
  independent_sources: 1,
  lost_by: lostBy,
})

export const fanout = {
  fanout_id: FANOUT_ID,
  orchestrator_id: 'scout',
  fanout_key: 'vantage-pricing-2026-11',
  question: 'How did Vantage change enterprise pricing over the last 18 months?',
  facts: ['vantage.enterprise.floor', 'vantage.partner.discount'],
  subtasks: [
    { subtask_id: 'st_3', scope: 'archived pricing pages', facts: ['vantage.enterprise.floor'] },
    { subtask_id: 'st_5', scope: 'CRM call notes', facts: ['vantage.enterprise.floor'] },
    { subtask_id: 'st_7', scope: 'partner portal', facts: ['vantage.partner.discount'] },
    { subtask_id: 'st_9', scope: 'analyst notes', facts: [] },
  ],
  deadline: '2026-11-30T18:00:00.000Z',
  policy: {
    resolve: ['source_priority', 'corroboration'],
    source_priority: ['https://vantage.com/', 'crm://'],
    min_independent_sources: 1,
    on_qualifier_difference: 'halt',
    on_incomplete: 'halt',
    decomposition: 'warn',
  },
  policy_digest: `sha256:${'1'.repeat(64)}`,
  decomposition: {
    uncovered_facts: [],
    overlaps: [{ fact: 'vantage.enterprise.floor', subtasks: ['st_3', 'st_5'] }],
  },
  status: 'halted',
  results: [],
  manifest_id: FANOUT_HALT_ID,
  created_at: AT,
}

export const fanoutHalt = {
  kind: 'reconciliation',
  manifest_id: FANOUT_HALT_ID,
  fanout_id: FANOUT_ID,
  orchestrator_id: 'scout',
  fanout_key: 'vantage-pricing-2026-11',
  issued_at: AT,
  verdict: 'INCOMPLETE',
  directive: 'HALT',
  policy: fanout.policy,
  policy_digest: fanout.policy_digest,
  coverage: {
    subtasks: [
      {
        subtask_id: 'st_3',
        status: 'DONE',
        revision: 1,
        received_at: AT,
        late: false,
        result_digest: `sha256:${'3'.repeat(64)}`,
      },
      {
        subtask_id: 'st_5',
        status: 'DONE_WITH_CONCERNS',
        revision: 2,
        received_at: AT,
        late: true,
        result_digest: `sha256:${'5'.repeat(64)}`,
      },
      {
        subtask_id: 'st_7',
        status: 'MISSING',
        revision: null,
        received_at: null,
        late: false,
        result_digest: null,
      },
      {
        subtask_id: 'st_9',
        status: 'BLOCKED',
        revision: 1,
        received_at: AT,
        late: false,
        result_digest: `sha256:${'9'.repeat(64)}`,
      },
    ],
    missing_subtasks: ['st_7'],
    late_subtasks: ['st_5'],
    needs_context: [],
    blocked: [{ subtask_id: 'st_9', blocking_reason: 'no access to the analyst portal' }],
    concerns: [{ subtask_id: 'st_5', concerns: ['one call note only'] }],
    uncovered_facts: ['vantage.partner.discount'],
    overlaps: [{ fact: 'vantage.enterprise.floor', subtasks: ['st_3', 'st_5'] }],
  },
  facts: [
    {
      fact: 'vantage.enterprise.floor',
      status: 'contested',
      answer: null,
      variants: [],
      rule: null,
      reason: 'qualifier_difference',
      // Positions are numbered in JCS order: `"qualifiers":{"applies_to"…` sorts before `"qualifiers":{}`.
      positions: [
        position('p1', { applies_to: 'new_logos' }, ['st_5#0'], null),
        position('p2', {}, ['st_3#0'], null),
      ],
      claims: [
        {
          claim_ref: 'st_3#0',
          subtask_id: 'st_3',
          revision: 1,
          position_id: 'p2',
          confidence: null,
          sources: [{ uri: 'https://vantage.com/pricing', excerpt: 'Enterprise from $60k/yr' }],
          out_of_scope: false,
        },
        {
          claim_ref: 'st_5#0',
          subtask_id: 'st_5',
          revision: 2,
          position_id: 'p1',
          confidence: 0.66,
          sources: [
            { uri: 'crm://opp/118204', excerpt: 'their AE confirmed 60k floor, new business only' },
            { uri: 'https://vantage.com/pricing/' },
          ],
          out_of_scope: false,
        },
      ],
      conflicts: [
        {
          a: 'p1',
          b: 'p2',
          differs: ['qualifiers'],
          qualifier_differences: [{ pointer: '/applies_to', a: 'new_logos' }],
        },
      ],
      echoes: [{ source: 'https://vantage.com/pricing', claims: ['st_3#0', 'st_5#0'] }],
    },
    {
      fact: 'vantage.partner.discount',
      status: 'unclaimed',
      answer: null,
      variants: [],
      rule: null,
      reason: null,
      positions: [],
      claims: [],
      conflicts: [],
      echoes: [],
    },
  ],
  reasons: [
    { code: 'blocked', subject: 'st_9' },
    { code: 'contested_fact', subject: 'vantage.enterprise.floor' },
    { code: 'missing_subtask', subject: 'st_7' },
    { code: 'uncovered_fact', subject: 'vantage.partner.discount' },
  ],
  supersedes: null,
  resolution: null,
}

export const fanoutStory = {
  fanout_id: FANOUT_ID,
  status: 'halted',
  records: [
    record(101, 'fanout.created', null, { fanout_id: FANOUT_ID }),
    record(102, 'result.recorded', null, { fanout_id: FANOUT_ID, subtask_id: 'st_3', revision: 1 }),
    record(
      103,
      'manifest.issued',
      'INCOMPLETE',
      {
        fanout_id: FANOUT_ID,
        manifest_digest: `sha256:${'a'.repeat(64)}`,
        directive: 'HALT',
        kind: 'reconciliation',
      },
      FANOUT_HALT_ID,
    ),
    record(104, 'escalation.opened', 'INCOMPLETE', { fanout_id: FANOUT_ID }, FANOUT_HALT_ID),
  ],
  manifest: null,
}

export const fanoutResolved = {
  ...fanoutHalt,
  manifest_id: 'd4e6f8a0-2c4e-4a6c-8e0a-2c4e6a8c0e17',
  verdict: 'HUMAN_RESOLVED',
  directive: 'PROCEED',
  supersedes: FANOUT_HALT_ID,
  resolution: { by: 'key-ops', rationale: 'New logos only.' },
}

export const review = {
  review_id: REVIEW_ID,
  orchestrator_id: 'orch-a',
  review_key: 'PR-481',
  mode: 'council',
  subject: { digest: `sha256:${'b'.repeat(64)}`, description: 'refund retry fix', uri: null },
  implementer: { model: 'model-m', context_id: 'ctx-1' },
  judges: [
    { judge_id: 'security', model: 'model-l', context_id: 'ctx-2', stage: null, role: null },
    { judge_id: 'style', model: 'model-k', context_id: 'ctx-3', stage: null, role: null },
  ],
  revision: 0,
  status: 'decided',
  verdicts: [],
  manifest_id: REVIEW_MANIFEST_ID,
  created_at: AT,
}

export const reviewManifest = {
  kind: 'review',
  manifest_id: REVIEW_MANIFEST_ID,
  review_id: REVIEW_ID,
  orchestrator_id: 'orch-a',
  review_key: 'PR-481',
  mode: 'council',
  revision: 0,
  subject: review.subject,
  implementer: review.implementer,
  judges: review.judges,
  issued_at: AT,
  verdict: 'ADVISORY',
  directive: 'ADVISORY',
  verdicts: [
    {
      judge_id: 'security',
      model: 'model-l',
      stage: null,
      role: null,
      status: 'DONE_WITH_CONCERNS',
      summary: 'Works, but a retry can refund twice.',
      concerns: ['retries are not idempotent'],
      blocking_question: null,
      blocking_reason: null,
      verdict_digest: `sha256:${'c'.repeat(64)}`,
    },
    {
      judge_id: 'style',
      model: 'model-k',
      stage: null,
      role: null,
      status: 'DONE',
      summary: 'Clean change.',
      concerns: [],
      blocking_question: null,
      blocking_reason: null,
      verdict_digest: `sha256:${'d'.repeat(64)}`,
    },
  ],
  concerns: [{ judge_id: 'security', concern: 'retries are not idempotent' }],
  blocking_question: null,
  blocking_reason: null,
  divergence: null,
  findings: [
    {
      fingerprint: `sha256:${'e'.repeat(64)}`,
      severity: 'high',
      title: 'retry without an idempotency key',
      location: 'src/refund.ts:42',
      reported_by: ['security', 'style'],
      models: ['model-k', 'model-l'],
      confidence: 1,
    },
    {
      fingerprint: `sha256:${'f'.repeat(64)}`,
      severity: 'low',
      title: 'long function',
      location: null,
      reported_by: ['style'],
      models: ['model-k'],
      confidence: 0.5,
    },
  ],
  supersedes: null,
}

export const reviewStory = {
  review_id: REVIEW_ID,
  status: 'decided',
  records: [
    record(201, 'review.created', null, { review_id: REVIEW_ID, mode: 'council' }),
    record(202, 'verdict.recorded', null, {
      review_id: REVIEW_ID,
      judge_id: 'security',
      revision: 0,
      status: 'DONE_WITH_CONCERNS',
    }),
    record(203, 'verdict.recorded', null, {
      review_id: REVIEW_ID,
      judge_id: 'style',
      revision: 0,
      status: 'DONE',
    }),
    record(
      204,
      'manifest.issued',
      'ADVISORY',
      { review_id: REVIEW_ID, directive: 'ADVISORY', kind: 'review' },
      REVIEW_MANIFEST_ID,
    ),
  ],
  manifest: null,
}

export const envelope = (manifest: { manifest_id: string }, auditSeq: number | null) => ({
  manifest,
  manifest_digest: `sha256:${'0'.repeat(63)}1`,
  jws: 'eyJhbGciOiJFZDI1NTE5In0.e30.c2ln',
  audit_seq: auditSeq,
})

function record(
  seq: number,
  kind: string,
  verdict: string | null,
  data: Record<string, unknown>,
  manifestId: string | null = null,
) {
  return {
    seq,
    at: AT,
    kind,
    actor: 'key-orchestrator',
    outcome_id: null,
    manifest_id: manifestId,
    subagent_id: null,
    orchestrator_id: kind.startsWith('review') || kind.startsWith('verdict') ? 'orch-a' : 'scout',
    verdict,
    data,
    prev_hash: `sha256:${'0'.repeat(64)}`,
    hash: `sha256:${'0'.repeat(64)}`,
  }
}
