import type { Queryable } from '../../../src/db/pool.ts'
import type { CaseKind, Decided } from '../../../src/engine/case-kind.ts'
import { AppError } from '../../../src/errors.ts'

/*
 * A tally of votes, a case kind that exists only in tests: fewer than two votes → pending; all votes equal →
 * UNANIMOUS (final); two differing votes → SPLIT (not final: wait for a third); three or more, still differing →
 * DEADLOCK, HALT and escalate; a human resolves a deadlock by naming the winner.
 */

export const TALLY_VERDICTS = ['UNANIMOUS', 'SPLIT', 'DEADLOCK', 'HUMAN_RESOLVED'] as const
export const TALLY_DIRECTIVES = ['PROCEED', 'REEVALUATE', 'HALT'] as const
export const TALLY_AUDIT_KINDS = ['tally.created', 'vote.recorded'] as const
export const TALLY_STATUSES = ['open', 'decided', 'halted', 'resolved'] as const

export type TallyStatus = (typeof TALLY_STATUSES)[number]

export interface TallyRow {
  id: string
  status: TallyStatus
  manifest_id: string | null
}

export interface TallyContent {
  tally_id: string
  verdict: (typeof TALLY_VERDICTS)[number]
  directive: (typeof TALLY_DIRECTIVES)[number]
  votes: string[]
  winner: string | null
}

/** The tally's transition function. */
export function nextStatus(
  status: TallyStatus,
  directive: TallyContent['directive'] | 'RESOLVE',
): TallyStatus {
  if (directive === 'RESOLVE') {
    if (status !== 'halted') throw new AppError('CONFLICT', `a ${status} tally awaits no resolution`)
    return 'resolved'
  }
  if (status !== 'open') throw new Error(`a ${status} tally takes no decision`)
  return directive === 'PROCEED' ? 'decided' : directive === 'HALT' ? 'halted' : 'open'
}

async function readTally(db: Queryable, id: string, lock: boolean): Promise<TallyRow | undefined> {
  const { rows } = await db.query<TallyRow>(
    `SELECT id, status, manifest_id FROM tallies WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
    [id],
  )
  return rows[0]
}

function decided(content: TallyContent, final: boolean, escalation: Decided<TallyContent>['escalation']) {
  return { kind: 'decided' as const, decided: { content, final, escalation } }
}

export const tallyCase: CaseKind<
  TallyRow,
  string[],
  TallyContent,
  { votes_needed: number },
  { winner: string }
> = {
  name: 'tally',
  manifestKind: 'tally',
  noun: 'tally',
  lock: (tx, id) => readTally(tx, id, true),
  find: (db, id) => readTally(db, id, false),
  caseId: (row) => row.id,
  status: (row) => row.status,
  manifestId: (row) => row.manifest_id,
  round: () => 0,
  auditSubject: (row) => ({ data: { tally_id: row.id } }),
  auditQuery: (id) => ({ data: { tally_id: id } }),
  async loadInput(tx, row) {
    const { rows } = await tx.query<{ choice: string }>(
      'SELECT choice FROM tally_votes WHERE tally_id = $1 ORDER BY voter',
      [row.id],
    )
    return rows.map((vote) => vote.choice)
  },
  inputsDigest: (_row, votes) => votes.join(','),
  decide(row, votes) {
    if (votes.length < 2) return { kind: 'pending', pending: { votes_needed: 2 - votes.length } }
    const unanimous = new Set(votes).size === 1
    const content = (verdict: TallyContent['verdict'], directive: TallyContent['directive']) => ({
      tally_id: row.id,
      verdict,
      directive,
      votes,
      winner: unanimous ? votes[0]! : null,
    })
    if (unanimous) return decided(content('UNANIMOUS', 'PROCEED'), true, null)
    if (votes.length === 2) return decided(content('SPLIT', 'REEVALUATE'), false, null)
    return decided(content('DEADLOCK', 'HALT'), true, { data: { votes } })
  },
  recordDecision: (row, decision, manifestId) => ({
    text: 'UPDATE tallies SET status = $2, manifest_id = $3 WHERE id = $1',
    values: [row.id, nextStatus(row.status, decision.content.directive), manifestId],
  }),
  resolution: {
    async checkAnswer(tx, row, answer) {
      const { rows } = await tx.query('SELECT 1 FROM tally_votes WHERE tally_id = $1 AND choice = $2', [
        row.id,
        answer.winner,
      ])
      if (rows.length === 0) throw new AppError('UNPROCESSABLE', `nobody voted for ${answer.winner}`)
    },
    haltManifestId(row) {
      nextStatus(row.status, 'RESOLVE')
      return row.manifest_id!
    },
    resolve(row, halt, answer) {
      return {
        content: {
          tally_id: row.id,
          verdict: 'HUMAN_RESOLVED',
          directive: 'PROCEED',
          votes: halt.votes as string[],
          winner: answer.winner,
        },
        data: { winner: answer.winner },
      }
    },
    async recordResolution(tx, row, manifestId) {
      await tx.query('UPDATE tallies SET status = $2, manifest_id = $3 WHERE id = $1', [
        row.id,
        nextStatus(row.status, 'RESOLVE'),
        manifestId,
      ])
    },
  },
}
