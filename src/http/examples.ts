/**
 * Examples of the shared resources (keys, probes) as the OpenAPI document shows them, taken from a real run.
 * Tests parse each with its schema and send the requests to a live app.
 */

/** `POST /v1/admin/keys`: a key for the orchestrator `planner`. */
export const createKeyExample = { role: 'orchestrator', orchestrator_ids: ['planner'], label: 'planner' }

/** Its answer: the secret `key` appears only here. */
export const createdKeyExample = {
  id: 'd8d33042-fa64-4b53-a3a2-849ccc20fb82',
  role: 'orchestrator',
  orchestrator_ids: ['planner'],
  label: 'planner',
  created_at: '2026-11-30T17:56:56.848Z',
  key: 'arb_mLcxgr3uVFW-sWGTd3NwDH0ExqSO2rgp_clPqY2_PJc',
}

/** `GET /v1/admin/keys`: one key, as listed (no secret). */
export const apiKeyExample = {
  id: 'd8d33042-fa64-4b53-a3a2-849ccc20fb82',
  role: 'orchestrator',
  orchestrator_ids: ['planner'],
  label: 'planner',
  created_at: '2026-11-30T17:56:56.848Z',
  revoked_at: null,
}

/** `POST /v1/probes`: ask the payments service about a refund; the token comes from the environment. */
export const probeDefinitionExample = {
  name: 'refund-status',
  request: {
    method: 'GET',
    url: 'https://payments.internal.example/refunds/{{params.refund_id}}',
    headers: { authorization: { env: 'PAYMENTS_TOKEN' } },
  },
  timeout_ms: 2000,
  retries: 1,
  predicate: {
    status: 200,
    pointer: '/status',
    map: { settled: 'success', pending: 'partial', failed: 'failure' },
  },
}

/** The registered probe. */
export const probeExample = {
  probe_id: '0a2c82e2-b46d-4774-92d0-d0c413a2cbb9',
  name: 'refund-status',
  version: 1,
  probe_digest: 'sha256:ef2b7c379f7648172eefbeb27292ed820ab697c7a1f5f36cde2e98591954fe15',
  definition: probeDefinitionExample,
  created_at: '2026-11-30T17:56:57.984Z',
}

/** `POST /v1/probes/{id}/dry-run`: the template's parameters. */
export const dryRunExample = { params: { refund_id: 're_1' } }

/** Its answer: the refund is settled, so the probe reads `success`. */
export const dryRunAnswerExample = {
  probe_id: '0a2c82e2-b46d-4774-92d0-d0c413a2cbb9',
  probe_version: 1,
  probe_digest: 'sha256:ef2b7c379f7648172eefbeb27292ed820ab697c7a1f5f36cde2e98591954fe15',
  request: { method: 'GET', url: 'https://payments.internal.example/refunds/re_1' },
  executed_at: '2026-11-30T17:56:58.096Z',
  attempts: 1,
  http_status: 200,
  response_digest: 'sha256:3b1f0e2c9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c',
  result: 'success',
  error: null,
}
