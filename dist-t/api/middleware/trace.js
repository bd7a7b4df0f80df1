"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.traceMiddleware = traceMiddleware;
const node_crypto_1 = require("node:crypto");
/**
 * Gives every request a trace id: in the X-Trace-Id header, in every error body and in every log line. The
 * same id goes out as X-Request-Id, the header the OpenAI SDKs surface as a result's `_request_id` and an
 * error's request id; set first, so every answer carries it: errors, 404s and streams included.
 *
 * Log lines get it explicitly (`trace_id` from res.locals.traceId, or the caller's traceId in the services), not
 * from an AsyncLocalStorage: on Node 20 that turns on promise hooks for every promise in the process.
 */
function traceMiddleware(req, res, next) {
    const traceId = (0, node_crypto_1.randomUUID)();
    res.locals.traceId = traceId;
    res.setHeader('X-Trace-Id', traceId);
    res.setHeader('X-Request-Id', traceId);
    next();
}
