import { randomUUID } from 'node:crypto'
import { appendAuditRecords } from '../../../src/audit-log/append.ts'
import { withTransaction } from '../../../src/db/pool.ts'
import { submitInput, writeInput } from '../../../src/engine/case-inputs.ts'
import { AppError } from '../../../src/errors.ts'
import type { ServiceContext } from '../../../src/services/context.ts'
import { tallyCase } from './kind.ts'

export async function createTally(ctx: Pick<ServiceContext, 'db'>, actor: string) {
  const id = randomUUID()
  await withTransaction(ctx.db, async (tx) => {
    await tx.query('INSERT INTO tallies (id) VALUES ($1)', [id])
    await appendAuditRecords(tx, [{ kind: 'tally.created', actor, data: { tally_id: id } }])
  })
  return { tally_id: id, status: 'open' as const }
}

/** A voter's vote, once: always through the transaction (a tally has no one-statement path). */
export async function castVote(
  ctx: Pick<ServiceContext, 'db'>,
  tallyId: string,
  vote: { voter: string; choice: string },
  actor: string,
) {
  return submitInput(ctx.db, {
    locked: async (tx) => {
      const tally = await tallyCase.lock(tx, tallyId)
      if (!tally) throw new AppError('NOT_FOUND', `no tally ${tallyId}`)
      if (tally.status !== 'open') throw new AppError('CONFLICT', `the tally is ${tally.status}`)
      const { rows } = await tx.query('SELECT 1 FROM tally_votes WHERE tally_id = $1 AND voter = $2', [
        tallyId,
        vote.voter,
      ])
      if (rows.length > 0) throw new AppError('CONFLICT', `${vote.voter} has voted`)
      await writeInput(tx, {
        writes: [
          {
            text: 'INSERT INTO tally_votes (tally_id, voter, choice) VALUES ($1, $2, $3)',
            values: [tallyId, vote.voter, vote.choice],
          },
        ],
        touch: { text: 'UPDATE tallies SET id = id WHERE id = $1', values: [tallyId] },
        audit: [{ kind: 'vote.recorded', actor, data: { tally_id: tallyId, ...vote } }],
      })
      return { tally_id: tallyId, ...vote }
    },
  })
}
