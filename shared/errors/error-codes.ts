/**
 * The one table of error codes (decisions.md section 3): code → HTTP status, OpenAI's error `type` (what the official
 * SDKs read as `err.type`), default reason, and whether repeating the same request can help. `retry` becomes the
 * `x-should-retry` header that the openai SDKs obey: false where a repeat gets the same answer or would start another
 * paid generation (a 408's generation was already answered with its id); true only for transient failures. A single
 * error may say otherwise (`AppError` option `retry`), e.g. a 408 whose request has an Idempotency-Key: a repeat joins
 * the same generation.
 */
export const ERROR_CODES = {
  BAD_REQUEST: { status: 400, type: 'invalid_request_error', reason: 'validation_failed', retry: false },
  UNAUTHORIZED: { status: 401, type: 'authentication_error', reason: undefined, retry: false },
  api_key_revoked: { status: 401, type: 'authentication_error', reason: 'key_revoked', retry: false },
  INSUFFICIENT_BALANCE: { status: 402, type: 'insufficient_quota', reason: 'balance_insufficient', retry: false },
  FORBIDDEN: { status: 403, type: 'permission_error', reason: undefined, retry: false },
  NOT_FOUND: { status: 404, type: 'not_found_error', reason: undefined, retry: false },
  REQUEST_TIMEOUT: { status: 408, type: 'timeout_error', reason: undefined, retry: false },
  /** A batch line not done within its batch's completion window (docs/batches.md). */
  batch_expired: { status: 408, type: 'timeout_error', reason: undefined, retry: false },
  CONFLICT: { status: 409, type: 'conflict_error', reason: undefined, retry: false },
  PAYLOAD_TOO_LARGE: { status: 413, type: 'invalid_request_error', reason: undefined, retry: false },
  TOO_MANY_REQUESTS: { status: 429, type: 'rate_limit_error', reason: 'rate_limited', retry: true },
  INTERNAL_ERROR: { status: 500, type: 'server_error', reason: undefined, retry: true },
  BAD_GATEWAY: { status: 502, type: 'server_error', reason: 'provider_error', retry: true },
  SERVICE_UNAVAILABLE: { status: 503, type: 'server_error', reason: undefined, retry: true },
} as const;

/** OpenAI's error types (https://platform.openai.com/docs/guides/error-codes), as the table above uses them. */
export type ErrorType = (typeof ERROR_CODES)[keyof typeof ERROR_CODES]['type'];

/** The type of a code; one from another version (a stored error) is a server error. */
export function errorType(code: string): ErrorType {
  return Object.hasOwn(ERROR_CODES, code) ? ERROR_CODES[code as keyof typeof ERROR_CODES].type : 'server_error';
}

export type ErrorCode = keyof typeof ERROR_CODES;

export const ERROR_REASONS = [
  'validation_failed',
  'model_not_found',
  'no_eligible_provider',
  'price_above_max',
  'parameters_unsupported',
  'provider_error',
  'all_providers_failed',
  'upstream_timeout',
  'balance_insufficient',
  'key_limit_exceeded',
  'member_limit_exceeded',
  'rate_limited',
  'key_revoked',
  'not_cancellable',
] as const;
export type ErrorReason = (typeof ERROR_REASONS)[number];

/** Status of each routing reason (decisions.md section 3). */
export const REASON_CODES: Partial<Record<ErrorReason, ErrorCode>> = {
  model_not_found: 'NOT_FOUND',
  no_eligible_provider: 'BAD_REQUEST',
  price_above_max: 'BAD_REQUEST',
  parameters_unsupported: 'BAD_REQUEST',
  all_providers_failed: 'BAD_GATEWAY',
  provider_error: 'BAD_GATEWAY',
  upstream_timeout: 'BAD_GATEWAY',
  balance_insufficient: 'INSUFFICIENT_BALANCE',
  key_limit_exceeded: 'INSUFFICIENT_BALANCE',
  member_limit_exceeded: 'INSUFFICIENT_BALANCE',
  rate_limited: 'TOO_MANY_REQUESTS',
  key_revoked: 'api_key_revoked',
  not_cancellable: 'CONFLICT',
};
