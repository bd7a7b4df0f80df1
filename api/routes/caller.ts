import type { Response } from 'express';
import type { Caller } from '../services/generation-order';

/** The caller of an authenticated request, as the guard left it on `res.locals` (principal, trace id and span, Idempotency-Key). */
export function callerOf(res: Response): Caller {
  return { principal: res.locals.principal, traceId: res.locals.traceId, traceparent: res.locals.traceparent, idempotency: res.locals.idempotency };
}
