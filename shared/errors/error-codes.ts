/** The one table of error codes (decisions.md section 3): code → HTTP status and default reason. */
export const ERROR_CODES = {
  BAD_REQUEST: { status: 400, reason: 'validation_failed' },
  UNAUTHORIZED: { status: 401, reason: undefined },
  api_key_revoked: { status: 401, reason: 'key_revoked' },
  INSUFFICIENT_BALANCE: { status: 402, reason: 'balance_insufficient' },
  FORBIDDEN: { status: 403, reason: undefined },
  NOT_FOUND: { status: 404, reason: undefined },
  REQUEST_TIMEOUT: { status: 408, reason: undefined },
  CONFLICT: { status: 409, reason: undefined },
  PAYLOAD_TOO_LARGE: { status: 413, reason: undefined },
  TOO_MANY_REQUESTS: { status: 429, reason: 'rate_limited' },
  INTERNAL_ERROR: { status: 500, reason: undefined },
  BAD_GATEWAY: { status: 502, reason: 'provider_error' },
  SERVICE_UNAVAILABLE: { status: 503, reason: undefined },
} as const;

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
