/**
 * The Vantage example (docs/fanouts.md) as the OpenAPI document shows it: two workers that never saw each other
 * report Vantage's enterprise floor — same amount, dates six weeks apart, and only the CRM note carries the
 * carve-out "new logos only". The manifest example is computed by the real reconciliation, so the document
 * cannot drift from what the service answers.
 */
import type { SubtaskResult } from '../../domain/fanout/claims.ts'
import { reconcile } from '../../domain/fanout/reconcile.ts'
import { applyResolution } from '../../domain/fanout/resolution.ts'
import { withPolicyDefaults } from '../../domain/fanout/vocabulary.ts'
import { hashJson } from '../../domain/shared/canonical-json.ts'
import type { ReconciliationManifest } from './kind.ts'
import type { CreateFanoutBody, FanoutResolutionBody } from './schemas.ts'

const FLOOR = 'vantage.enterprise.floor'
const FANOUT_ID = '5d0f4a8e-2b1c-4c3e-9a7f-1e2d3c4b5a69'
const HALT_ID = '8c1e2f3a-4b5c-4d6e-8f70-1a2b3c4d5e6f'
const RESOLUTION_ID = 'b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e'

/** `POST /v1/fanouts`: the question, the facts it needs, who researches what, and the policy. */
export const createFanoutExample: CreateFanoutBody = {
  orchestrator_id: 'scout',
  fanout_key: 'vantage-pricing-2026-11',
  question: 'How did Vantage change enterprise pricing over the last 18 months?',
  facts: [FLOOR],
  subtasks: [
    { subtask_id: 'st_3', scope: 'archived pricing pages, vantage.com', facts: [FLOOR] },
    { subtask_id: 'st_5', scope: 'CRM call notes, competitive-loss field', facts: [FLOOR] },
  ],
  deadline: '2026-11-30T18:00:00Z',
  policy: {
    resolve: ['source_priority', 'corroboration'],
    source_priority: ['https://vantage.com/', 'crm://'],
  },
}

const SIXTY_K = { amount: 60000, currency: 'USD', per: 'year' }

/**
 * `POST /v1/fanouts/{id}/results`: the archived pricing page (st_3), the CRM note (st_5), and a worker that needs
 * context. Not typed with the body's schema type: the schema shows these examples, so the type would refer to
 * itself (a test parses each with the schema instead).
 */
export const resultExamples = [
  {
    subtask_id: 'st_3',
    status: 'DONE',
    summary: 'Archived pricing page shows a $60k enterprise floor from March 2025.',
    evidence: ['web.archive.org capture 2025-03-04'],
    claims: [
      {
        fact: FLOOR,
        value: SIXTY_K,
        effective_date: '2025-03-01',
        confidence: 0.81,
        sources: [
          {
            uri: 'https://vantage.com/pricing',
            excerpt: "capture 2025-03-04: 'Enterprise — from $60,000/yr'",
            observed_at: '2025-03-04T09:12:00Z',
          },
        ],
      },
    ],
    worker: { model: 'model-x', context_id: 'ctx-3' },
  },
  {
    subtask_id: 'st_5',
    status: 'DONE',
    summary: 'CRM notes show the new floor applies to new logos only.',
    evidence: ['opp 118204 note'],
    claims: [
      {
        fact: FLOOR,
        value: SIXTY_K,
        effective_date: '2025-01-22',
        qualifiers: { applies_to: 'new_logos' },
        confidence: 0.66,
        sources: [{ uri: 'crm://opp/118204', excerpt: 'their AE confirmed 60k floor, new business only' }],
      },
    ],
    worker: { model: 'model-x', context_id: 'ctx-5' },
  },
  {
    subtask_id: 'st_5',
    status: 'NEEDS_CONTEXT',
    summary: 'Two CRM fields disagree on the floor.',
    blocking_question: 'Which CRM field is authoritative: competitive_loss or deal_notes?',
  },
]

/** `POST /v1/fanouts/{id}/resolution`: a person answers the contested fact, carve-out included. */
export const resolutionExample: FanoutResolutionBody = {
  facts: [
    {
      fact: FLOOR,
      answer: { value: SIXTY_K, effective_date: '2025-01-22', qualifiers: { applies_to: 'new_logos' } },
    },
  ],
  rationale: 'Sales confirmed with Vantage: the $60k floor applies to new logos from 22 January 2025.',
}

const policy = withPolicyDefaults(createFanoutExample.policy)

const storedResults: SubtaskResult[] = [resultExamples[0]!, resultExamples[1]!].map((body, i) => ({
  subtask_id: body.subtask_id,
  revision: 1,
  status: 'DONE',
  late: false,
  received_at: `2026-11-29T1${i}:00:00.000Z`,
  result_digest: hashJson(body),
  claims: body.claims ?? [],
  blocking_question: null,
  blocking_reason: null,
  concerns: [],
}))

const reconciliation = reconcile({
  fanout: { facts: createFanoutExample.facts, subtasks: createFanoutExample.subtasks, policy },
  results: storedResults,
  deadline_passed: false,
  closed: false,
})
if (reconciliation.kind !== 'decided') throw new Error('the Vantage example reconciles')

/** What `POST …/reconcile` signs for the two results above: CONTESTED + HALT, the carve-out kept. */
export const haltManifestExample: ReconciliationManifest = {
  kind: 'reconciliation',
  manifest_id: HALT_ID,
  fanout_id: FANOUT_ID,
  orchestrator_id: createFanoutExample.orchestrator_id,
  fanout_key: createFanoutExample.fanout_key,
  issued_at: '2026-11-29T12:00:01.000Z',
  verdict: reconciliation.verdict,
  directive: reconciliation.directive,
  policy,
  policy_digest: hashJson(policy),
  coverage: reconciliation.coverage,
  facts: reconciliation.facts,
  reasons: reconciliation.reasons,
  supersedes: null,
  resolution: null,
}

const envelope = (manifest: ReconciliationManifest, auditSeq: number) => ({
  manifest,
  manifest_digest: hashJson(manifest),
  jws: 'eyJhbGciOiJFZDI1NTE5Iiwia2lkIjoi…',
  audit_seq: auditSeq,
})

export const haltEnvelopeExample = envelope(haltManifestExample, 7)

const resolved = applyResolution(haltManifestExample, resolutionExample.facts)

export const resolvedEnvelopeExample = envelope(
  {
    ...haltManifestExample,
    manifest_id: RESOLUTION_ID,
    issued_at: '2026-11-29T15:30:00.000Z',
    verdict: resolved.verdict,
    directive: resolved.directive,
    coverage: resolved.coverage,
    facts: resolved.facts,
    reasons: resolved.reasons,
    supersedes: HALT_ID,
    resolution: { by: '0f3c2b1a-9e8d-4c7b-a6f5-e4d3c2b1a098', rationale: resolutionExample.rationale },
  },
  10,
)

export const pendingExample = { status: 'pending', missing_subtasks: ['st_5'] }

export const fanoutViewExample = {
  fanout_id: FANOUT_ID,
  orchestrator_id: createFanoutExample.orchestrator_id,
  fanout_key: createFanoutExample.fanout_key,
  question: createFanoutExample.question,
  facts: createFanoutExample.facts,
  subtasks: createFanoutExample.subtasks.map((subtask) => ({ ...subtask, scope: subtask.scope ?? null })),
  deadline: '2026-11-30T18:00:00.000Z',
  policy,
  policy_digest: hashJson(policy),
  decomposition: { uncovered_facts: [], overlaps: [{ fact: FLOOR, subtasks: ['st_3', 'st_5'] }] },
  status: 'halted',
  results: storedResults.map(({ subtask_id, revision, status, late, result_digest, received_at }) => ({
    subtask_id,
    revision,
    status,
    late,
    result_digest,
    received_at,
  })),
  manifest_id: HALT_ID,
  created_at: '2026-11-29T09:00:00.000Z',
}

export const resultAnswerExample = {
  fanout_id: FANOUT_ID,
  subtask_id: 'st_5',
  revision: 1,
  status: 'DONE',
  late: false,
  result_digest: storedResults[1]!.result_digest,
  received_at: storedResults[1]!.received_at,
}

/** `GET /v1/audit/fanouts/{id}` after the two results and the HALT (records abridged to their first). */
export const storyExample = {
  fanout_id: FANOUT_ID,
  status: 'halted',
  records: [
    {
      seq: 1,
      at: '2026-11-29T09:00:00.000Z',
      kind: 'fanout.created',
      actor: '0f3c2b1a-9e8d-4c7b-a6f5-e4d3c2b1a097',
      outcome_id: null,
      manifest_id: null,
      subagent_id: null,
      orchestrator_id: 'scout',
      verdict: null,
      data: { fanout_id: FANOUT_ID, fanout_key: createFanoutExample.fanout_key },
      prev_hash: `sha256:${'0'.repeat(64)}`,
      hash: `sha256:${'5e'.repeat(32)}`,
    },
  ],
  manifest: haltEnvelopeExample,
}
