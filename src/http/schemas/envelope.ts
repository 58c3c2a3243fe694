import { z } from 'zod'

/**
 * The envelope of a signed manifest whose fields `manifest` describes; `id` names it in the OpenAPI document,
 * which shows `examples` with it.
 */
export function envelopeOf(manifest: z.ZodType, id: string, examples?: unknown[]) {
  return z
    .object({
      manifest,
      manifest_digest: z.string(),
      jws: z.string(),
      audit_seq: z
        .number()
        .int()
        .nullable()
        .describe(
          "seq of the manifest's manifest.issued audit record, outside the signature. It can be null in the answer " +
            'that issued the manifest (evaluate, resolution, reconcile, decide): the log’s sequencer places records ' +
            'milliseconds after they commit. Once placed it is fixed, and every envelope served afterwards carries ' +
            'it (GET /v1/manifests/{id}; lists and the stream wait for it).',
        ),
    })
    .meta({
      id,
      description:
        'A signed manifest: `jws` is an Ed25519 JWS over JCS(manifest); verify it against /.well-known/jwks.json. ' +
        'The manifest is served exactly as it was signed.',
      ...(examples ? { examples } : {}),
    })
}
