export { type ArbiterClient, type ArbiterClientOptions, createArbiterClient, paginate } from './client.ts'
export {
  ArbiterClientError,
  ArbiterError,
  ArbiterNetworkError,
  ArbiterProtocolError,
  ArbiterTimeoutError,
  ArbiterVerificationError,
  type FieldError,
  type Problem,
  type RequestLabel,
  type VerificationCheck,
} from './errors.ts'
export type { JsonValue } from './generated/openapi.ts'
export type { ManifestEvent, ManifestStreamOptions } from './manifest-stream.ts'
export { DEFAULT_RETRY, parseRetryAfter, RETRYABLE_STATUSES, type RetryOptions } from './retry.ts'
export type { CallOptions, Idempotency } from './transport.ts'
export * from './types.ts'
export {
  type JsonWebKeySet,
  type Verified,
  type VerifiedEnvelope,
  verifyEnvelope,
} from './verify-envelope.ts'
export {
  type LogPublicKey,
  type ManifestInclusionProof,
  type VerifiedInclusion,
  type VerifyInclusionOptions,
  verifyInclusion,
} from './verify-inclusion.ts'
export {
  DEFAULT_WEBHOOK_TOLERANCE_SECONDS,
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookHeaders,
  type WebhookManifestEnvelope,
} from './verify-webhook.ts'
