"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.REASON_CODES = exports.ERROR_REASONS = exports.ERROR_CODES = void 0;
/**
 * The one table of error codes (decisions.md section 3): code → HTTP status, default reason, and whether repeating
 * the same request can help. `retry` becomes the `x-should-retry` header that the openai SDKs obey: false where a
 * repeat gets the same answer or would start another paid generation (a 408's generation was already answered with
 * its id); true only for transient failures. A single error may say otherwise (`AppError` option `retry`), e.g. a
 * 408 whose request has an Idempotency-Key: a repeat joins the same generation.
 */
exports.ERROR_CODES = {
    BAD_REQUEST: { status: 400, reason: 'validation_failed', retry: false },
    UNAUTHORIZED: { status: 401, reason: undefined, retry: false },
    api_key_revoked: { status: 401, reason: 'key_revoked', retry: false },
    INSUFFICIENT_BALANCE: { status: 402, reason: 'balance_insufficient', retry: false },
    FORBIDDEN: { status: 403, reason: undefined, retry: false },
    NOT_FOUND: { status: 404, reason: undefined, retry: false },
    REQUEST_TIMEOUT: { status: 408, reason: undefined, retry: false },
    CONFLICT: { status: 409, reason: undefined, retry: false },
    PAYLOAD_TOO_LARGE: { status: 413, reason: undefined, retry: false },
    TOO_MANY_REQUESTS: { status: 429, reason: 'rate_limited', retry: true },
    INTERNAL_ERROR: { status: 500, reason: undefined, retry: true },
    BAD_GATEWAY: { status: 502, reason: 'provider_error', retry: true },
    SERVICE_UNAVAILABLE: { status: 503, reason: undefined, retry: true },
};
exports.ERROR_REASONS = [
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
];
/** Status of each routing reason (decisions.md section 3). */
exports.REASON_CODES = {
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
