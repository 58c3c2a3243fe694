/**
 * The status report every worker (fan-out results) and judge (review verdicts) returns in: one of four
 * statuses, so routing is mechanical instead of an interpretation of prose. Listed from least to most strict:
 * `BLOCKED` > `NEEDS_CONTEXT` > `DONE_WITH_CONCERNS` > `DONE`.
 */
export const REPORT_STATUSES = ['DONE', 'DONE_WITH_CONCERNS', 'NEEDS_CONTEXT', 'BLOCKED'] as const
export type ReportStatus = (typeof REPORT_STATUSES)[number]

/** Rank in the strictness order: higher is stricter. */
export function strictness(status: ReportStatus): number {
  return REPORT_STATUSES.indexOf(status)
}

/** The stricter of two statuses (either when equal). */
export function stricterStatus(a: ReportStatus, b: ReportStatus): ReportStatus {
  return strictness(b) > strictness(a) ? b : a
}
