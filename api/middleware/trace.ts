import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { traceContext } from '../../shared/logger';

/** Gives every request a trace id: in the X-Trace-Id header, in every error body and in every log line. */
export function traceMiddleware(req: Request, res: Response, next: NextFunction): void {
  const traceId = randomUUID();
  res.locals.traceId = traceId;
  res.setHeader('X-Trace-Id', traceId);
  traceContext.run({ traceId }, next);
}
