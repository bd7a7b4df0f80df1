import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { traceContext } from '../../shared/logger';

/**
 * Gives every request a trace id: in the X-Trace-Id header, in every error body and in every log line. The
 * same id goes out as X-Request-Id, the header the OpenAI SDKs surface as a result's `_request_id` and an
 * error's request id; set first, so every answer carries it: errors, 404s and streams included.
 */
export function traceMiddleware(req: Request, res: Response, next: NextFunction): void {
  const traceId = randomUUID();
  res.locals.traceId = traceId;
  res.setHeader('X-Trace-Id', traceId);
  res.setHeader('X-Request-Id', traceId);
  traceContext.run({ traceId }, next);
}
