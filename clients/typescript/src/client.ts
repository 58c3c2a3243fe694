import createClient, { type Client } from 'openapi-fetch'
import { ArbiterVerificationError } from './errors.ts'
import type { paths } from './generated/openapi.ts'
import { type ManifestEvent, type ManifestStreamOptions, streamManifests } from './manifest-stream.ts'
import { DEFAULT_RETRY, type RetryOptions } from './retry.ts'
import {
  type AttemptResult,
  type CallOptions,
  type Idempotency,
  send,
  type TransportSettings,
} from './transport.ts'
import type {
  AddEvidenceBody,
  AuditCheckpoint,
  AuditRecordPage,
  AuditRecordQuery,
  AuditVerification,
  AuditVerifyQuery,
  ConsistencyProof,
  ConsistencyProofQuery,
  CreatedApiKey,
  CreateFanoutBody,
  CreateKeyBody,
  CreateOutcomeBody,
  CreateReviewBody,
  CreateWebhookBody,
  DecideResult,
  DryRunBody,
  DryRunResult,
  EscalationPage,
  EscalationQuery,
  EvaluationResult,
  Fanout,
  FanoutPage,
  FanoutQuery,
  FanoutResolutionBody,
  FanoutResultBody,
  FanoutResultRecorded,
  Health,
  InclusionProof,
  InclusionProofQuery,
  InterpretationBody,
  InterpretationRecorded,
  Jwks,
  KeyPage,
  KeyQuery,
  ManifestEnvelope,
  ManifestInclusion,
  ManifestPage,
  ManifestQuery,
  Outcome,
  OutcomePage,
  OutcomeQuery,
  OutcomeStory,
  Probe,
  ProbeBody,
  ProbePage,
  ProbeQuery,
  ReconcileBody,
  ReconcileResult,
  ReconciliationEnvelope,
  ReplaceProbeBody,
  ResolutionBody,
  Review,
  ReviewPage,
  ReviewQuery,
  ReviewVerdictRecorded,
  RevisionBody,
  UpdateWebhookBody,
  VerdictBody,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryPage,
  WebhookDeliveryQuery,
  WebhookPage,
  WebhookQuery,
  WebhookWithSecret,
} from './types.ts'
import { type Verified, verifyEnvelope } from './verify-envelope.ts'

export interface ArbiterClientOptions {
  /** Where Arbiter listens, e.g. `https://arbiter.internal` (paths such as `/v1/outcomes` are appended). */
  baseUrl: string | URL
  /** Sent as `Authorization: Bearer <apiKey>`. Public routes (JWKS, health) work without one. */
  apiKey?: string
  /** Bound of each attempt of each call, in ms (overridable per call). Default 30,000. */
  timeoutMs?: number
  /** Retry policy of idempotent calls; see RetryOptions for the defaults. */
  retry?: Partial<RetryOptions>
  /** The fetch to use (a proxy-aware one, a test double); default `globalThis.fetch`. */
  fetch?: (request: Request) => Promise<Response>
  /** Extra headers sent with every call. */
  headers?: Record<string, string>
  /** Randomness of the backoff jitter; default Math.random. */
  random?: () => number
}

/**
 * A typed Arbiter client. Every call takes `CallOptions` (`signal`, `timeoutMs`, `maxAttempts`), resolves with the
 * response body the OpenAPI document describes, and rejects with an ArbiterClientError: ArbiterError for a
 * problem+json answer, ArbiterNetworkError, ArbiterTimeoutError, ArbiterProtocolError, or the signal's reason.
 *
 * Idempotent calls are retried on 429/503 (after Retry-After) and on lost connections: reads, and the writes the
 * service deduplicates — by natural key (outcome creation), by content (evidence items are a set, resubmitting an
 * orchestrator's latest interpretation returns it), or by construction (evaluate returns the same manifest for
 * unchanged inputs, revoking a revoked key changes nothing). The same holds for fan-outs and reviews: creation by
 * natural key, a worker's result and a judge's verdict by content, reconcile and decide by construction.
 * Resolutions, review revisions, key creation, probe registration, replacement and dry runs, and webhook
 * registration, deletion, secret rotation, redelivery and test events are sent once: a second delivery would be a
 * second act (for a deletion, a 404 for one that worked).
 */
export interface ArbiterClient {
  readonly outcomes: {
    /** POST /v1/outcomes — 201 created, or 200 with the same outcome for the same body (natural key). Retried. */
    create(body: CreateOutcomeBody, options?: CallOptions): Promise<Outcome>
    /** GET /v1/outcomes/{id} */
    get(outcomeId: string, options?: CallOptions): Promise<Outcome>
    /** GET /v1/outcomes — one page; see `paginate` for all of them. */
    list(query?: OutcomeQuery, options?: CallOptions): Promise<OutcomePage>
    /** POST /v1/outcomes/{id}/evidence — the union of all items so far. Retried (items are a set). */
    addEvidence(outcomeId: string, body: AddEvidenceBody, options?: CallOptions): Promise<Outcome>
    /** POST /v1/outcomes/{id}/interpretations — a new revision, or 200 with the latest one when it is equal. Retried. */
    interpret(
      outcomeId: string,
      body: InterpretationBody,
      options?: CallOptions,
    ): Promise<InterpretationRecorded>
    /** POST /v1/outcomes/{id}/evaluate — the signed manifest, or `{status: 'pending', …}` (see isEvaluationPending). Retried. */
    evaluate(outcomeId: string, options?: CallOptions): Promise<EvaluationResult>
    /** POST /v1/outcomes/{id}/resolution (ops) — a HUMAN_RESOLVED manifest superseding the HALT. Sent once. */
    resolve(outcomeId: string, body: ResolutionBody, options?: CallOptions): Promise<ManifestEnvelope>
  }
  readonly manifests: {
    /** GET /v1/manifests/{id} */
    get(manifestId: string, options?: CallOptions): Promise<ManifestEnvelope>
    /** GET /v1/manifests — envelopes in log order, one page. */
    list(query?: ManifestQuery, options?: CallOptions): Promise<ManifestPage>
    /** GET /v1/manifests/stream as an async iterator that reconnects and resumes (see streamManifests). */
    stream(options?: ManifestStreamOptions): AsyncGenerator<ManifestEvent, void, undefined>
    /** GET /v1/manifests/{id}/inclusion — the manifest's log record, inclusion proof and signed checkpoint. */
    inclusion(manifestId: string, options?: CallOptions): Promise<ManifestInclusion>
    /**
     * Verifies an envelope against the service's JWKS, fetched once and fetched again when a `kid` is unknown (a
     * key rotated in since). Throws ArbiterVerificationError when the envelope does not verify.
     */
    verify<T>(envelope: T, options?: CallOptions): Promise<Verified<T>>
  }
  readonly fanouts: {
    /** POST /v1/fanouts — 201 created, or 200 with the same fan-out for the same body (natural key). Retried. */
    create(body: CreateFanoutBody, options?: CallOptions): Promise<Fanout>
    /** GET /v1/fanouts/{id} */
    get(fanoutId: string, options?: CallOptions): Promise<Fanout>
    /** GET /v1/fanouts — one page. */
    list(query?: FanoutQuery, options?: CallOptions): Promise<FanoutPage>
    /** POST /v1/fanouts/{id}/results — one worker's return; the same body again answers 200 with it. Retried. */
    submitResult(
      fanoutId: string,
      body: FanoutResultBody,
      options?: CallOptions,
    ): Promise<FanoutResultRecorded>
    /**
     * POST /v1/fanouts/{id}/reconcile — the signed reconciliation manifest, or `{status: 'pending', …}` (see
     * isReconcilePending). `{close: true}` stops waiting for missing subtasks. Retried (unchanged inputs give the
     * same manifest).
     */
    reconcile(fanoutId: string, body?: ReconcileBody, options?: CallOptions): Promise<ReconcileResult>
    /** POST /v1/fanouts/{id}/resolution (ops) — answers the HALT's contested facts. Sent once. */
    resolve(
      fanoutId: string,
      body: FanoutResolutionBody,
      options?: CallOptions,
    ): Promise<ReconciliationEnvelope>
  }
  readonly reviews: {
    /** POST /v1/reviews — 201 created, or 200 with the same review for the same body (natural key). Retried. */
    create(body: CreateReviewBody, options?: CallOptions): Promise<Review>
    /** GET /v1/reviews/{id} */
    get(reviewId: string, options?: CallOptions): Promise<Review>
    /** GET /v1/reviews — one page. */
    list(query?: ReviewQuery, options?: CallOptions): Promise<ReviewPage>
    /** POST /v1/reviews/{id}/verdicts — one judge's verdict; the same body again answers 200 with it. Retried. */
    submitVerdict(reviewId: string, body: VerdictBody, options?: CallOptions): Promise<ReviewVerdictRecorded>
    /** POST /v1/reviews/{id}/revisions — the implementer revised after REVISE: verdicts start afresh. Sent once. */
    revise(reviewId: string, body: RevisionBody, options?: CallOptions): Promise<Review>
    /**
     * POST /v1/reviews/{id}/decide — the signed review manifest, or `{status: 'pending', …}` (see
     * isDecidePending). Retried (the same verdicts give the same manifest).
     */
    decide(reviewId: string, options?: CallOptions): Promise<DecideResult>
  }
  /** GET /.well-known/jwks.json — every key that ever signed a manifest. */
  jwks(options?: CallOptions): Promise<Jwks>
  readonly escalations: {
    /** GET /v1/escalations (ops) */
    list(query?: EscalationQuery, options?: CallOptions): Promise<EscalationPage>
  }
  readonly audit: {
    /** GET /v1/audit/records (ops) — one page, ascending seq. */
    records(query?: AuditRecordQuery, options?: CallOptions): Promise<AuditRecordPage>
    /** GET /v1/audit/outcomes/{id} (ops) — one outcome's records and current manifest. */
    outcome(outcomeId: string, options?: CallOptions): Promise<OutcomeStory>
    /** GET /v1/audit/verify (ops) */
    verify(query?: AuditVerifyQuery, options?: CallOptions): Promise<AuditVerification>
    /** GET /v1/audit/checkpoint — the log's latest signed checkpoint. */
    checkpoint(options?: CallOptions): Promise<AuditCheckpoint>
    /** GET /v1/audit/proofs/inclusion — record `seq` is in the tree of `tree_size` (RFC 9162). */
    inclusionProof(query: InclusionProofQuery, options?: CallOptions): Promise<InclusionProof>
    /** GET /v1/audit/proofs/consistency — the tree of `to_size` extends the tree of `from_size` (RFC 9162). */
    consistencyProof(query: ConsistencyProofQuery, options?: CallOptions): Promise<ConsistencyProof>
  }
  readonly keys: {
    /** POST /v1/admin/keys (admin) — the secret is in the answer only. Sent once. */
    create(body: CreateKeyBody, options?: CallOptions): Promise<CreatedApiKey>
    /** GET /v1/admin/keys (admin) */
    list(query?: KeyQuery, options?: CallOptions): Promise<KeyPage>
    /** DELETE /v1/admin/keys/{id} (admin) — revoking twice is revoking once. Retried. */
    revoke(keyId: string, options?: CallOptions): Promise<void>
  }
  readonly probes: {
    /** POST /v1/probes (admin). Sent once. */
    create(body: ProbeBody, options?: CallOptions): Promise<Probe>
    /** GET /v1/probes/{id} */
    get(probeId: string, options?: CallOptions): Promise<Probe>
    /** GET /v1/probes */
    list(query?: ProbeQuery, options?: CallOptions): Promise<ProbePage>
    /** PUT /v1/probes/{id} (admin) — every PUT is a new version. Sent once. */
    replace(probeId: string, body: ReplaceProbeBody, options?: CallOptions): Promise<Probe>
    /** POST /v1/probes/{id}/dry-run (admin) — calls the probe's target now. Sent once. */
    dryRun(probeId: string, body: DryRunBody, options?: CallOptions): Promise<DryRunResult>
  }
  readonly webhooks: {
    /** POST /v1/webhooks (admin) — the signing secret is in the answer only. Sent once. */
    create(body: CreateWebhookBody, options?: CallOptions): Promise<WebhookWithSecret>
    /** GET /v1/webhooks (admin) */
    list(query?: WebhookQuery, options?: CallOptions): Promise<WebhookPage>
    /** GET /v1/webhooks/{id} (admin) */
    get(webhookId: string, options?: CallOptions): Promise<Webhook>
    /** PATCH /v1/webhooks/{id} (admin) — `disabled: false` enables it again. Retried: the same change twice is once. */
    update(webhookId: string, body: UpdateWebhookBody, options?: CallOptions): Promise<Webhook>
    /** DELETE /v1/webhooks/{id} (admin) — the webhook and its deliveries. Sent once. */
    delete(webhookId: string, options?: CallOptions): Promise<void>
    /** POST /v1/webhooks/{id}/rotate-secret (admin) — the previous secret keeps signing for 24 h. Sent once. */
    rotateSecret(webhookId: string, options?: CallOptions): Promise<WebhookWithSecret>
    /** GET /v1/webhooks/{id}/deliveries (admin) — newest first (next_cursor: older ones), with their attempts. */
    deliveries(
      webhookId: string,
      query?: WebhookDeliveryQuery,
      options?: CallOptions,
    ): Promise<WebhookDeliveryPage>
    /** POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver (admin) — attempted again now. Sent once. */
    redeliver(webhookId: string, deliveryId: string, options?: CallOptions): Promise<WebhookDelivery>
    /** POST /v1/webhooks/{id}/test (admin) — a webhook.test event to this webhook alone. Sent once. */
    test(webhookId: string, options?: CallOptions): Promise<WebhookDelivery>
  }
  /** GET /healthz */
  health(options?: CallOptions): Promise<Health>
  /**
   * The underlying openapi-fetch client (base URL and key set; no retries, no timeout) for anything not wrapped
   * here. Its answers are `{data, error, response}`, not exceptions.
   */
  readonly raw: Client<paths>
}

export function createArbiterClient(options: ArbiterClientOptions): ArbiterClient {
  const baseUrl = String(options.baseUrl).replace(/\/+$/, '')
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers }
  if (options.apiKey !== undefined) headers.authorization = `Bearer ${options.apiKey}`
  const api = createClient<paths>({
    baseUrl,
    headers,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
  const settings: TransportSettings = {
    timeoutMs: options.timeoutMs ?? 30_000,
    retry: { ...DEFAULT_RETRY, ...options.retry },
    ...(options.random ? { random: options.random } : {}),
  }

  function call<T>(
    method: string,
    path: string,
    idempotency: Idempotency,
    callOptions: CallOptions | undefined,
    attempt: (signal: AbortSignal) => Promise<AttemptResult<T>>,
  ): Promise<T> {
    return send({ method, path }, idempotency, settings, callOptions, attempt)
  }

  let jwksCache: Promise<Jwks> | undefined
  const jwks = (callOptions?: CallOptions) =>
    call('GET', '/.well-known/jwks.json', 'idempotent', callOptions, (signal) =>
      api.GET('/.well-known/jwks.json', { signal }),
    )

  return {
    outcomes: {
      create: (body, o) =>
        call('POST', '/v1/outcomes', 'idempotent', o, (signal) => api.POST('/v1/outcomes', { body, signal })),
      get: (id, o) =>
        call('GET', '/v1/outcomes/{id}', 'idempotent', o, (signal) =>
          api.GET('/v1/outcomes/{id}', { params: { path: { id } }, signal }),
        ),
      list: (query, o) =>
        call('GET', '/v1/outcomes', 'idempotent', o, (signal) =>
          api.GET('/v1/outcomes', { params: { query }, signal }),
        ),
      addEvidence: (id, body, o) =>
        call('POST', '/v1/outcomes/{id}/evidence', 'idempotent', o, (signal) =>
          api.POST('/v1/outcomes/{id}/evidence', { params: { path: { id } }, body, signal }),
        ),
      interpret: (id, body, o) =>
        call('POST', '/v1/outcomes/{id}/interpretations', 'idempotent', o, (signal) =>
          api.POST('/v1/outcomes/{id}/interpretations', { params: { path: { id } }, body, signal }),
        ),
      evaluate: (id, o) =>
        call('POST', '/v1/outcomes/{id}/evaluate', 'idempotent', o, (signal) =>
          api.POST('/v1/outcomes/{id}/evaluate', { params: { path: { id } }, body: {}, signal }),
        ),
      resolve: (id, body, o) =>
        call('POST', '/v1/outcomes/{id}/resolution', 'once', o, (signal) =>
          api.POST('/v1/outcomes/{id}/resolution', { params: { path: { id } }, body, signal }),
        ),
    },
    manifests: {
      get: (id, o) =>
        call('GET', '/v1/manifests/{id}', 'idempotent', o, (signal) =>
          api.GET('/v1/manifests/{id}', { params: { path: { id } }, signal }),
        ),
      list: (query, o) =>
        call('GET', '/v1/manifests', 'idempotent', o, (signal) =>
          api.GET('/v1/manifests', { params: { query }, signal }),
        ),
      inclusion: (id, o) =>
        call('GET', '/v1/manifests/{id}/inclusion', 'idempotent', o, (signal) =>
          api.GET('/v1/manifests/{id}/inclusion', { params: { path: { id } }, signal }),
        ),
      stream: (streamOptions) =>
        streamManifests(
          {
            api,
            connectTimeoutMs: settings.timeoutMs,
            ...(settings.random ? { random: settings.random } : {}),
          },
          streamOptions,
        ),
      async verify(envelope, o) {
        const cached = jwksCache
        jwksCache = cached ?? jwks(o)
        try {
          return await verifyEnvelope(envelope, await jwksCache)
        } catch (err) {
          if (cached === undefined && !(err instanceof ArbiterVerificationError)) jwksCache = undefined
          // The key may have been rotated in after the JWKS was read: read it again, once.
          if (cached !== undefined && err instanceof ArbiterVerificationError && err.check === 'kid') {
            jwksCache = jwks(o)
            return verifyEnvelope(envelope, await jwksCache)
          }
          throw err
        }
      },
    },
    fanouts: {
      create: (body, o) =>
        call('POST', '/v1/fanouts', 'idempotent', o, (signal) => api.POST('/v1/fanouts', { body, signal })),
      get: (id, o) =>
        call('GET', '/v1/fanouts/{id}', 'idempotent', o, (signal) =>
          api.GET('/v1/fanouts/{id}', { params: { path: { id } }, signal }),
        ),
      list: (query, o) =>
        call('GET', '/v1/fanouts', 'idempotent', o, (signal) =>
          api.GET('/v1/fanouts', { params: { query }, signal }),
        ),
      submitResult: (id, body, o) =>
        call('POST', '/v1/fanouts/{id}/results', 'idempotent', o, (signal) =>
          api.POST('/v1/fanouts/{id}/results', { params: { path: { id } }, body, signal }),
        ),
      reconcile: (id, body, o) =>
        call('POST', '/v1/fanouts/{id}/reconcile', 'idempotent', o, (signal) =>
          api.POST('/v1/fanouts/{id}/reconcile', { params: { path: { id } }, body: body ?? {}, signal }),
        ),
      resolve: (id, body, o) =>
        call('POST', '/v1/fanouts/{id}/resolution', 'once', o, (signal) =>
          api.POST('/v1/fanouts/{id}/resolution', { params: { path: { id } }, body, signal }),
        ),
    },
    reviews: {
      create: (body, o) =>
        call('POST', '/v1/reviews', 'idempotent', o, (signal) => api.POST('/v1/reviews', { body, signal })),
      get: (id, o) =>
        call('GET', '/v1/reviews/{id}', 'idempotent', o, (signal) =>
          api.GET('/v1/reviews/{id}', { params: { path: { id } }, signal }),
        ),
      list: (query, o) =>
        call('GET', '/v1/reviews', 'idempotent', o, (signal) =>
          api.GET('/v1/reviews', { params: { query }, signal }),
        ),
      submitVerdict: (id, body, o) =>
        call('POST', '/v1/reviews/{id}/verdicts', 'idempotent', o, (signal) =>
          api.POST('/v1/reviews/{id}/verdicts', { params: { path: { id } }, body, signal }),
        ),
      revise: (id, body, o) =>
        call('POST', '/v1/reviews/{id}/revisions', 'once', o, (signal) =>
          api.POST('/v1/reviews/{id}/revisions', { params: { path: { id } }, body, signal }),
        ),
      decide: (id, o) =>
        call('POST', '/v1/reviews/{id}/decide', 'idempotent', o, (signal) =>
          api.POST('/v1/reviews/{id}/decide', { params: { path: { id } }, body: {}, signal }),
        ),
    },
    jwks,
    escalations: {
      list: (query, o) =>
        call('GET', '/v1/escalations', 'idempotent', o, (signal) =>
          api.GET('/v1/escalations', { params: { query }, signal }),
        ),
    },
    audit: {
      records: (query, o) =>
        call('GET', '/v1/audit/records', 'idempotent', o, (signal) =>
          api.GET('/v1/audit/records', { params: { query }, signal }),
        ),
      outcome: (id, o) =>
        call('GET', '/v1/audit/outcomes/{id}', 'idempotent', o, (signal) =>
          api.GET('/v1/audit/outcomes/{id}', { params: { path: { id } }, signal }),
        ),
      verify: (query, o) =>
        call('GET', '/v1/audit/verify', 'idempotent', o, (signal) =>
          api.GET('/v1/audit/verify', { params: { query }, signal }),
        ),
      checkpoint: (o) =>
        call('GET', '/v1/audit/checkpoint', 'idempotent', o, (signal) =>
          api.GET('/v1/audit/checkpoint', { signal }),
        ),
      inclusionProof: (query, o) =>
        call('GET', '/v1/audit/proofs/inclusion', 'idempotent', o, (signal) =>
          api.GET('/v1/audit/proofs/inclusion', { params: { query }, signal }),
        ),
      consistencyProof: (query, o) =>
        call('GET', '/v1/audit/proofs/consistency', 'idempotent', o, (signal) =>
          api.GET('/v1/audit/proofs/consistency', { params: { query }, signal }),
        ),
    },
    keys: {
      create: (body, o) =>
        call('POST', '/v1/admin/keys', 'once', o, (signal) => api.POST('/v1/admin/keys', { body, signal })),
      list: (query, o) =>
        call('GET', '/v1/admin/keys', 'idempotent', o, (signal) =>
          api.GET('/v1/admin/keys', { params: { query }, signal }),
        ),
      revoke: async (id, o) => {
        await call('DELETE', '/v1/admin/keys/{id}', 'idempotent', o, (signal) =>
          api.DELETE('/v1/admin/keys/{id}', { params: { path: { id } }, signal }),
        )
      },
    },
    probes: {
      create: (body, o) =>
        call('POST', '/v1/probes', 'once', o, (signal) => api.POST('/v1/probes', { body, signal })),
      get: (id, o) =>
        call('GET', '/v1/probes/{id}', 'idempotent', o, (signal) =>
          api.GET('/v1/probes/{id}', { params: { path: { id } }, signal }),
        ),
      list: (query, o) =>
        call('GET', '/v1/probes', 'idempotent', o, (signal) =>
          api.GET('/v1/probes', { params: { query }, signal }),
        ),
      replace: (id, body, o) =>
        call('PUT', '/v1/probes/{id}', 'once', o, (signal) =>
          api.PUT('/v1/probes/{id}', { params: { path: { id } }, body, signal }),
        ),
      dryRun: (id, body, o) =>
        call('POST', '/v1/probes/{id}/dry-run', 'once', o, (signal) =>
          api.POST('/v1/probes/{id}/dry-run', { params: { path: { id } }, body, signal }),
        ),
    },
    webhooks: {
      create: (body, o) =>
        call('POST', '/v1/webhooks', 'once', o, (signal) => api.POST('/v1/webhooks', { body, signal })),
      list: (query, o) =>
        call('GET', '/v1/webhooks', 'idempotent', o, (signal) =>
          api.GET('/v1/webhooks', { params: { query }, signal }),
        ),
      get: (id, o) =>
        call('GET', '/v1/webhooks/{id}', 'idempotent', o, (signal) =>
          api.GET('/v1/webhooks/{id}', { params: { path: { id } }, signal }),
        ),
      update: (id, body, o) =>
        call('PATCH', '/v1/webhooks/{id}', 'idempotent', o, (signal) =>
          api.PATCH('/v1/webhooks/{id}', { params: { path: { id } }, body, signal }),
        ),
      delete: async (id, o) => {
        await call('DELETE', '/v1/webhooks/{id}', 'once', o, (signal) =>
          api.DELETE('/v1/webhooks/{id}', { params: { path: { id } }, signal }),
        )
      },
      rotateSecret: (id, o) =>
        call('POST', '/v1/webhooks/{id}/rotate-secret', 'once', o, (signal) =>
          api.POST('/v1/webhooks/{id}/rotate-secret', { params: { path: { id } }, signal }),
        ),
      deliveries: (id, query, o) =>
        call('GET', '/v1/webhooks/{id}/deliveries', 'idempotent', o, (signal) =>
          api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query }, signal }),
        ),
      redeliver: (id, deliveryId, o) =>
        call('POST', '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', 'once', o, (signal) =>
          api.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', {
            params: { path: { id, delivery_id: deliveryId } },
            signal,
          }),
        ),
      test: (id, o) =>
        call('POST', '/v1/webhooks/{id}/test', 'once', o, (signal) =>
          api.POST('/v1/webhooks/{id}/test', { params: { path: { id } }, signal }),
        ),
    },
    health: (o) => call('GET', '/healthz', 'idempotent', o, (signal) => api.GET('/healthz', { signal })),
    raw: api,
  }
}

/**
 * Every item of a cursor-paginated list, page after page: `for await (const o of paginate(client.outcomes.list,
 * {status: 'halted'}))`. Stops at `next_cursor: null`, the list's only end signal.
 */
export async function* paginate<T, Q extends { cursor?: string }>(
  list: (query: Q | undefined, options?: CallOptions) => Promise<{ items: T[]; next_cursor: string | null }>,
  query: Q,
  options?: CallOptions,
): AsyncGenerator<T, void, undefined> {
  let cursor = query.cursor
  for (;;) {
    const page = await list({ ...query, ...(cursor === undefined ? {} : { cursor }) }, options)
    yield* page.items
    if (page.next_cursor === null) return
    cursor = page.next_cursor
  }
}
