"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.AppError = void 0;
exports.isAppError = isAppError;
const error_codes_1 = require("./error-codes");
/** The one error class: a known failure with its code; anything else becomes INTERNAL_ERROR. */
class AppError extends Error {
    code;
    status;
    details;
    metadata;
    /** Whether repeating the request can help (`x-should-retry`); from the code table. */
    retry;
    /** Extra response headers, e.g. Retry-After. */
    headers;
    constructor(code, message, opts = {}) {
        super(message);
        this.name = 'AppError';
        this.code = code;
        this.status = error_codes_1.ERROR_CODES[code].status;
        this.retry = opts.retry ?? error_codes_1.ERROR_CODES[code].retry;
        this.details = opts.details;
        const reason = error_codes_1.ERROR_CODES[code].reason;
        this.metadata = opts.metadata ?? (reason ? { reason } : undefined);
        this.headers = opts.headers;
    }
    /** An error chosen by its machine reason (e.g. `key_limit_exceeded` → 402 INSUFFICIENT_BALANCE). */
    static fromReason(reason, message, metadata = {}) {
        const code = error_codes_1.REASON_CODES[reason] ?? 'BAD_REQUEST';
        return new AppError(code, message, { metadata: { reason, ...metadata } });
    }
    static validation(errors, message = 'Invalid request: check parameters and body') {
        return new AppError('BAD_REQUEST', message, { details: { errors }, metadata: { reason: 'validation_failed' } });
    }
    /** The form it is stored and sent between processes in (see StoredError). */
    toStored() {
        return { code: this.code, status: this.status, message: this.message, metadata: this.metadata };
    }
    /**
     * Rebuilds an error from its stored form. A code this version does not know becomes BAD_GATEWAY; a provider's
     * wait (`metadata.retry_after_seconds`, all providers rate-limited) reaches the caller as Retry-After.
     */
    static fromStored(e) {
        const code = (Object.hasOwn(error_codes_1.ERROR_CODES, e.code) ? e.code : 'BAD_GATEWAY');
        const wait = e.metadata?.retry_after_seconds;
        const headers = typeof wait === 'number' && wait > 0 ? { 'Retry-After': String(wait) } : undefined;
        return new AppError(code, e.message, { metadata: e.metadata, headers });
    }
    /** The JSON body of decisions.md section 3. */
    toBody(traceId) {
        const error = { code: this.code, message: this.message, trace_id: traceId };
        if (this.details && this.status < 500)
            error.details = this.details;
        if (this.metadata)
            error.metadata = this.metadata;
        return { error, trace_id: traceId };
    }
}
exports.AppError = AppError;
function isAppError(e) {
    return e instanceof AppError;
}
