"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.callerOf = callerOf;
/** The caller of an authenticated request, as the guard left it on `res.locals` (principal, trace id, Idempotency-Key). */
function callerOf(res) {
    return { principal: res.locals.principal, traceId: res.locals.traceId, idempotency: res.locals.idempotency };
}
