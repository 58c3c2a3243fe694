/**
 * One colour per verdict for the decisions chart, each at least 3:1 against the white plot area. Verdicts of one
 * case kind are far apart in colour (they share a chart most often); the halting and human verdicts — criteria
 * differ, contested, human-resolved — are told apart at a glance: red, magenta, near-black.
 */
export const VERDICT_COLOURS: Readonly<Record<string, string>> = {
  // outcomes
  SINGLE_ORCHESTRATOR: '#6b7280',
  AGREED: '#15803d',
  GROUND_TRUTH_RESOLVES: '#0e7490',
  ARBITER_DECIDES: '#1d4ed8',
  DISJOINT_ACTIONS: '#7c3aed',
  POLICY_RESOLVES: '#a16207',
  CRITERIA_MATCH_EVIDENCE_DIFFERS: '#ea580c',
  CRITERIA_DIFFER: '#dc2626',
  // outcomes and fan-outs
  HUMAN_RESOLVED: '#111827',
  // fan-outs
  RECONCILED: '#65a30d',
  CONTESTED: '#c026d3',
  INCOMPLETE: '#92400e',
  // reviews
  DONE: '#166534',
  DONE_WITH_CONCERNS: '#4d7c0f',
  NEEDS_CONTEXT: '#b45309',
  BLOCKED: '#7f1d1d',
  ADVISORY: '#475569',
}

/** The verdicts each case kind can issue. */
export const VERDICTS_BY_KIND: Readonly<Record<string, readonly string[]>> = {
  outcome: [
    'SINGLE_ORCHESTRATOR',
    'AGREED',
    'GROUND_TRUTH_RESOLVES',
    'ARBITER_DECIDES',
    'DISJOINT_ACTIONS',
    'POLICY_RESOLVES',
    'CRITERIA_MATCH_EVIDENCE_DIFFERS',
    'CRITERIA_DIFFER',
    'HUMAN_RESOLVED',
  ],
  reconciliation: ['RECONCILED', 'CONTESTED', 'INCOMPLETE', 'HUMAN_RESOLVED'],
  review: ['DONE', 'DONE_WITH_CONCERNS', 'NEEDS_CONTEXT', 'BLOCKED', 'ADVISORY'],
}

/** For a verdict this console does not know yet. */
export const FALLBACK_COLOURS = ['#0f766e', '#7c2d12', '#312e81', '#701a75']
