"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.canonicalJson = canonicalJson;
exports.requestHash = requestHash;
exports.idempotencyKey = idempotencyKey;
const node_crypto_1 = require("node:crypto");
const app_error_1 = require("../../shared/errors/app-error");
/** Printable ASCII, as Stripe and OpenAI accept (a UUID is the usual choice). */
const KEY = /^[\x21-\x7e]{1,255}$/;
/** JSON with object keys sorted: the same body with its fields in another order is the same request. */
function canonicalJson(value) {
    if (Array.isArray(value))
        return `[${value.map(canonicalJson).join(',')}]`;
    if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
        const o = value;
        return `{${Object.keys(o)
            .filter((k) => o[k] !== undefined)
            .sort()
            .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
            .join(',')}}`;
    }
    return JSON.stringify(value ?? null);
}
/** What makes two requests "the same" under one key: method, path and body. */
function requestHash(method, path, body) {
    return (0, node_crypto_1.createHash)('sha256').update(`${method} ${path}\n${canonicalJson(body)}`).digest('hex');
}
/**
 * Reads the `Idempotency-Key` header of a POST into `res.locals.idempotency` ({key, hash}); the generation routes
 * pass it to the gateway, which claims the key with the generation (docs/idempotency.md). Other routes ignore it.
 */
function idempotencyKey(req, res, next) {
    const key = req.get('idempotency-key');
    if (req.method !== 'POST' || key === undefined)
        return next();
    if (!KEY.test(key)) {
        return next(app_error_1.AppError.validation([{ path: '/headers/idempotency-key', message: 'must be 1 to 255 printable ASCII characters' }], 'Invalid Idempotency-Key header'));
    }
    const claim = { key, hash: requestHash(req.method, req.path, req.body) };
    res.locals.idempotency = claim;
    next();
}
