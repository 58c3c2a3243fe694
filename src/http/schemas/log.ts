import { z } from 'zod'

const base64Hash = z.string().describe('base64 (standard, padded) of 32 raw bytes')

/** Examples, all from one real 20-record log, so they check against each other. */
const EXAMPLE_CHECKPOINT = {
  origin: 'arbiter.local/log/0b6f4f5e-3f0a-4c8e-9d56-3c2e8f1a7b90',
  tree_size: 20,
  root_hash: 'pVzyzuZln4Ou8bm0X2XBSRTevHlfLXxfczxDtqp8Xm4=',
  head_seq: 20,
  head_hash: 'sha256:232eb8e55d86cd9c7ac78681df886c3cc8f43a3d672ca3c678c0b9f6fcc0114b',
  at: '2026-11-30T17:09:58.991Z',
}
const EXAMPLE_SIGNED_CHECKPOINT = {
  checkpoint: EXAMPLE_CHECKPOINT,
  note: 'arbiter.local/log/0b6f4f5e-3f0a-4c8e-9d56-3c2e8f1a7b90\n20\npVzyzuZln4Ou8bm0X2XBSRTevHlfLXxfczxDtqp8Xm4=\n\n— arbiter.local/log/0b6f4f5e-3f0a-4c8e-9d56-3c2e8f1a7b90 iQHkMU+fMr5IlpmouxBvDM2j+pIe978oFz9oV3ys7neqdQeajPySdJ9vAho2/y85qT1VloG/V1aMFyIu6WkshxN4gAs=\n',
  jws: 'eyJhbGciOiJFZDI1NTE5Iiwia2lkIjoiNG9ROUpVR2RoWXd4Q3ljZ3lOU3hUbVBUUUxxYkRvTUdyQ1cyalJ4UTNZayJ9.eyJhdCI6IjIwMjYtMTEtMzBUMTc6MDk6NTguOTkxWiIsImhlYWRfaGFzaCI6InNoYTI1NjoyMzJlYjhlNTVkODZjZDljN2FjNzg2ODFkZjg4NmMzY2M4ZjQzYTNkNjcyY2EzYzY3OGMwYjlmNmZjYzAxMTRiIiwiaGVhZF9zZXEiOjIwLCJvcmlnaW4iOiJhcmJpdGVyLmxvY2FsL2xvZy8wYjZmNGY1ZS0zZjBhLTRjOGUtOWQ1Ni0zYzJlOGYxYTdiOTAiLCJyb290X2hhc2giOiJwVnp5enVabG40T3U4Ym0wWDJYQlNSVGV2SGxmTFh4ZmN6eER0cXA4WG00PSIsInRyZWVfc2l6ZSI6MjB9.n5LZW4XtjnRM2rgtXnzmyIIWfPt4pjlLSjQllSINUgKXOBD3xgIJ0f7Y5pwY8Zblds0LWgdrK48NKOysfPi0Cw',
}

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
    examples: [EXAMPLE_CHECKPOINT],
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
    examples: [EXAMPLE_SIGNED_CHECKPOINT],
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
        leaf_hash: '69Ss+uZfdVCsCPC2AGls7A4DtM+S5HQiaMNvFyRwPnM=',
        proof: [
          'HVyEI4TTxqB5SNHqXLlHJHCCX7XJtJUlsj0rRVJR5yU=',
          'JnAAS7f2j6Eu+0oNpJw9QQDaffwyHSwgTik2YCQC+Y0=',
          '66QuDJd1hYg3SwzgbEttfODmF//tAjfFEAuFaphyDbA=',
        ],
        checkpoint: EXAMPLE_SIGNED_CHECKPOINT,
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
          '0ZPevPh0nMB89l+xXMrvkEFWzC5J1UdU7JPzs5dnQkE=',
          'Pkzekm5dClca/CKgmaJBorwHpLLPeuIt+TIM3yAUjvk=',
          'hJRIpoXulZq1qEYyGJbe8DOZvO75RjS7jmLHoiEiNHY=',
          'g9EuBLIyb/uXpFqcZAAtDN65ggd37h4VXu54FmVSg4U=',
          'e3QNI+CHjrA6K54beA4FdHm/+XxJk84Omas2XpM8hf8=',
          '+hmO1bOc+5QlEtMeeRU5AkccdCZ32Ku9YOJ+3yGHSNA=',
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
    tree_size: z.number().int().describe('size of the tree the check reached'),
    root_hash: base64Hash.describe('root of that tree, recomputed from the records'),
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
        checked: 20,
        head_seq: 20,
        head_hash: 'sha256:232eb8e55d86cd9c7ac78681df886c3cc8f43a3d672ca3c678c0b9f6fcc0114b',
        tree_size: 20,
        root_hash: 'pVzyzuZln4Ou8bm0X2XBSRTevHlfLXxfczxDtqp8Xm4=',
        checkpoints_checked: 3,
        first_bad_seq: null,
      },
    ],
  })
