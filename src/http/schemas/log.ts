import { z } from 'zod'

/**
 * A query-string integer ≥ 1 written in plain decimal: digits only, no sign, no leading zero, no `0x`. Numbers
 * past 2^53 are kept as read (they can only lie beyond the log, which the handlers answer with 404).
 */
export const positiveQueryInteger = z
  .string()
  .regex(/^(0|[1-9][0-9]*)$/, 'must be a plain decimal integer (no sign, no leading zero)')
  .refine((text) => text !== '0', 'must be at least 1')
  .transform(Number)

const base64Hash = z.string().describe('base64 (standard, padded) of 32 raw bytes')

const EXAMPLE_ORIGIN = 'arbiter.local/log/0b6f4f5e-3f0a-4c8e-9d56-3c2e8f1a7b90'

export const logCheckpointSchema = z
  .object({
    origin: z.string().describe("the log's name: the note's first line and the note key's name"),
    tree_size: z.number().int().describe('number of records in the tree'),
    root_hash: base64Hash.describe('RFC 9162 root over the first tree_size records, base64'),
    head_seq: z.number().int().describe('seq of the last record in the tree (= tree_size)'),
    head_hash: z.string().describe("that record's chain hash"),
    at: z.string().describe('when the checkpoint was signed'),
  })
  .meta({
    id: 'LogCheckpoint',
    examples: [
      {
        origin: EXAMPLE_ORIGIN,
        tree_size: 1204,
        root_hash: 'n5jZ6mO5tE9mYp8rX0fhk3D1c2J7l6V7w9yq0b3QJ8s=',
        head_seq: 1204,
        head_hash: 'sha256:4c1f0e8a2b7d9c3e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0',
        at: '2026-01-15T09:30:00.000Z',
      },
    ],
  })

export const signedCheckpointSchema = z
  .object({
    checkpoint: logCheckpointSchema,
    note: z
      .string()
      .describe(
        'C2SP signed note of the tlog-checkpoint body (origin, tree size, base64 root), signed with Ed25519; key name = origin',
      ),
    jws: z.string().describe('compact JWS over JCS(checkpoint), same key and header as manifests'),
  })
  .meta({
    id: 'SignedCheckpoint',
    examples: [
      {
        checkpoint: {
          origin: EXAMPLE_ORIGIN,
          tree_size: 1204,
          root_hash: 'n5jZ6mO5tE9mYp8rX0fhk3D1c2J7l6V7w9yq0b3QJ8s=',
          head_seq: 1204,
          head_hash: 'sha256:4c1f0e8a2b7d9c3e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0',
          at: '2026-01-15T09:30:00.000Z',
        },
        note: `${EXAMPLE_ORIGIN}\n1204\nn5jZ6mO5tE9mYp8rX0fhk3D1c2J7l6V7w9yq0b3QJ8s=\n\n— ${EXAMPLE_ORIGIN} Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n`,
        jws: 'eyJhbGciOiJFZDI1NTE5Iiwia2lkIjoiLi4uIn0.eyJhdCI6Ii4uLiJ9.c2lnbmF0dXJl',
      },
    ],
  })

export const inclusionProofSchema = z
  .object({
    seq: z.number().int(),
    leaf_index: z.number().int().describe('seq − 1'),
    tree_size: z.number().int(),
    leaf_hash: base64Hash.describe('SHA-256(0x00 ‖ JCS(record)), base64'),
    proof: z.array(base64Hash).describe('RFC 9162 inclusion path, bottom to top'),
    checkpoint: signedCheckpointSchema
      .nullable()
      .describe('the signed checkpoint of tree_size, when one is stored (always without ?tree_size)'),
  })
  .meta({
    id: 'InclusionProof',
    examples: [
      {
        seq: 17,
        leaf_index: 16,
        tree_size: 20,
        leaf_hash: 'vX2FJ8mmr8Fv0hS3d1P1R0r0Sm1y3cW7fZ9c2vR8yN4=',
        proof: [
          'mQ0bS0l8k8S9Ie4m7iXr4pW1tZ3q0tB2f7yR4mD7gS8=',
          '0Hc7r9S1vQ2n8l4d1e6Ck8kq9W6a7X3y2Z5t4u1p0O8=',
          'Kc7p1Q9b2m8S4t0xR6w3Y5z1Aa2Bb3Cc4Dd5Ee6Ff7g=',
        ],
        checkpoint: null,
      },
    ],
  })

export const consistencyProofSchema = z
  .object({
    from_size: z.number().int(),
    to_size: z.number().int(),
    proof: z.array(base64Hash).describe('RFC 9162 consistency proof; [] when the sizes are equal'),
  })
  .meta({
    id: 'ConsistencyProof',
    examples: [
      {
        from_size: 7,
        to_size: 20,
        proof: [
          'aGk3Zq9P1x8Rr2T4v6W8y0A2c4E6g8I0k2M4o6Q8s0U=',
          'bHl4ar0Q2y9Ss3U5w7X9z1B3d5F7h9J1l3N5p7R9t1V=',
        ],
      },
    ],
  })

export const verifyReportSchema = z
  .object({
    ok: z.boolean(),
    checked: z.number().int().describe('records checked'),
    head_seq: z.number().int().nullable().describe('last record checked'),
    head_hash: z.string().nullable(),
    tree_size: z.number().int().describe('size of the tree the check ended at'),
    root_hash: base64Hash.nullable().describe('root of that tree, recomputed from the records'),
    checkpoints_checked: z.number().int(),
    first_bad_seq: z
      .number()
      .int()
      .nullable()
      .describe(
        'first seq at which a record, tree node or checkpoint does not verify (a node or checkpoint counts at the seq that completed it); null when ok',
      ),
  })
  .meta({
    id: 'AuditVerifyReport',
    examples: [
      {
        ok: true,
        checked: 1204,
        head_seq: 1204,
        head_hash: 'sha256:4c1f0e8a2b7d9c3e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f7a8b9c0',
        tree_size: 1204,
        root_hash: 'n5jZ6mO5tE9mYp8rX0fhk3D1c2J7l6V7w9yq0b3QJ8s=',
        checkpoints_checked: 37,
        first_bad_seq: null,
      },
    ],
  })
