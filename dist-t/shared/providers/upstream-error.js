"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.UpstreamError = void 0;
exports.upstreamFailure = upstreamFailure;
exports.reasonForStatus = reasonForStatus;
exports.upstreamError = upstreamError;
exports.abortedError = abortedError;
exports.isUpstreamError = isUpstreamError;
exports.parseRetryAfter = parseRetryAfter;
/**
 * The retry rule: may the next endpoint be tried after this failure?
 * `unauthorized` is true on purpose: an upstream 401/403 means OUR key for that provider is wrong or lacks
 * access (the caller was already authorised by us), so another provider may well answer. `bad_request` is
 * false: the same input would be refused elsewhere too.
 */
const FALLBACK_BY_REASON = new Map([
    ['provider_error', true],
    ['upstream_timeout', true],
    ['rate_limited', true],
    ['malformed_reply', true],
    ['unauthorized', true],
    ['bad_request', false],
]);
/** HTTP statuses with their own meaning; other 4xx are `bad_request`, other statuses `provider_error`. */
const REASON_BY_STATUS = new Map([
    [400, 'bad_request'],
    [401, 'unauthorized'],
    [403, 'unauthorized'],
    [404, 'bad_request'],
    [408, 'upstream_timeout'],
    [409, 'provider_error'], // lock/conflict: transient (openai-node retries it too)
    [413, 'bad_request'],
    [422, 'bad_request'],
    [429, 'rate_limited'],
    [504, 'upstream_timeout'],
    [524, 'upstream_timeout'], // Cloudflare "a timeout occurred"
]);
/** Node/undici error codes of a failed connection or exchange. */
const REASON_BY_ERROR_CODE = new Map([
    ['UND_ERR_HEADERS_TIMEOUT', 'upstream_timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'upstream_timeout'],
    ['UND_ERR_CONNECT_TIMEOUT', 'upstream_timeout'],
    ['ETIMEDOUT', 'upstream_timeout'],
    ['ECONNRESET', 'provider_error'],
    ['ECONNREFUSED', 'provider_error'],
    ['EPIPE', 'provider_error'],
    ['ENOTFOUND', 'provider_error'],
    ['EAI_AGAIN', 'provider_error'],
    ['EHOSTUNREACH', 'provider_error'],
    ['UND_ERR_SOCKET', 'provider_error'],
    ['UND_ERR_CLOSED', 'provider_error'],
    ['UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'provider_error'],
]);
const RAW_LIMIT = 2000;
function upstreamFailure(problem) {
    switch (problem.kind) {
        case 'reply': {
            const info = readBody(problem.body, problem.extract);
            const reason = reasonForStatus(problem.status);
            const message = info.message ?? `upstream answered HTTP ${problem.status}`;
            return make(reason, message, { status: problem.status, raw: clip(problem.body) });
        }
        case 'stream_error': {
            const info = readBody(problem.body, problem.extract);
            return make(info.reason ?? 'provider_error', info.message ?? 'upstream stream reported an error', { raw: clip(problem.body) });
        }
        case 'network': {
            const code = errorCode(problem.error);
            const reason = (code !== undefined ? REASON_BY_ERROR_CODE.get(code) : undefined) ?? 'provider_error';
            const message = problem.error instanceof Error ? problem.error.message : String(problem.error);
            return make(reason, code ? `${code}: ${message}` : message);
        }
        case 'timeout':
            return make('upstream_timeout', `no answer within ${problem.timeoutMs} ms`);
        case 'malformed':
            return make('malformed_reply', problem.message, problem.raw === undefined ? {} : { raw: clip(problem.raw) });
        case 'unsupported':
            // Reason `bad_request` (the input is the problem) but fallback: another provider may accept it.
            return { reason: 'bad_request', message: problem.message, fallback: true };
    }
}
function reasonForStatus(status) {
    const known = REASON_BY_STATUS.get(status);
    if (known)
        return known;
    if (status >= 400 && status < 500)
        return 'bad_request';
    return 'provider_error';
}
function make(reason, message, extra = {}) {
    return { reason, message, ...extra, fallback: FALLBACK_BY_REASON.get(reason) ?? true };
}
function readBody(body, extract) {
    if (!extract)
        return {};
    let parsed;
    try {
        parsed = JSON.parse(body);
    }
    catch {
        return {};
    }
    try {
        return extract(parsed);
    }
    catch {
        return {};
    }
}
/** undici puts the socket's code on `cause` ("other side closed" → cause ECONNRESET). */
function errorCode(error) {
    for (let e = error, depth = 0; e && typeof e === 'object' && depth < 4; e = e.cause, depth++) {
        const code = e.code;
        if (typeof code === 'string' && REASON_BY_ERROR_CODE.has(code))
            return code;
    }
    const top = error && typeof error === 'object' ? error.code : undefined;
    return typeof top === 'string' ? top : undefined;
}
function clip(text) {
    return text.length > RAW_LIMIT ? `${text.slice(0, RAW_LIMIT)}…` : text;
}
/** Every upstream failure surfaces as this. `aborted`: the caller's own signal ended it (not the provider's fault). */
class UpstreamError extends Error {
    name = 'UpstreamError';
    failure;
    aborted;
    /** From a `Retry-After` header, when the provider sent one. */
    retryAfterMs;
    constructor(failure, options = {}) {
        super(failure.message, options.cause === undefined ? undefined : { cause: options.cause });
        this.failure = failure;
        this.aborted = options.aborted ?? false;
        if (options.retryAfterMs !== undefined)
            this.retryAfterMs = options.retryAfterMs;
    }
}
exports.UpstreamError = UpstreamError;
function upstreamError(problem, options) {
    return new UpstreamError(upstreamFailure(problem), options);
}
/** The caller gave up (job cancelled, client gone): not a provider failure, so never a reason to fall back. */
function abortedError(cause) {
    return new UpstreamError({ reason: 'provider_error', message: 'request aborted by the caller', fallback: false }, { cause, aborted: true });
}
function isUpstreamError(error) {
    return error instanceof UpstreamError;
}
/** `Retry-After` is seconds or an HTTP date. */
function parseRetryAfter(value, now) {
    if (!value)
        return undefined;
    const seconds = Number(value);
    if (Number.isFinite(seconds) && seconds >= 0)
        return Math.round(seconds * 1000);
    const at = Date.parse(value);
    return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
