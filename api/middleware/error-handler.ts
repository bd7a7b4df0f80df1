import type { NextFunction, Request, Response } from 'express';
import { AppError, isAppError } from '../../shared/errors/app-error';
import type { Logger } from '../../shared/logger';
import { CLIENT_CLOSED_STATUS, isBodyAborted } from './client-gone';

/** Maps body-parser and infrastructure failures to our codes; anything unknown is a 500 with details only in the log. */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const e = err as { type?: string; status?: number; message?: string; code?: string; name?: string };
  if (e?.type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE', 'Request body too large');
  if (e?.type === 'entity.parse.failed') return AppError.validation([{ path: '/', message: 'body is not valid JSON' }], 'Request body is not valid JSON');
  // A path with a bad percent-escape (`/v1/media/%ff`): Express cannot decode the route parameter.
  if (err instanceof URIError) return AppError.validation([{ path: '/', message: 'the URL has a malformed percent-escape' }], 'The URL is not valid: a malformed percent-escape');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') return new AppError('BAD_REQUEST', e.message ?? 'Unsupported encoding');
  if (isUnavailable(e)) return new AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable: repeat later');
  return new AppError('INTERNAL_ERROR', 'Internal server error');
}

/** Redis (one server or a cluster in failover) or PostgreSQL out of reach: the caller should retry, it is not our bug. */
function isUnavailable(e: { message?: string; code?: string; name?: string } | undefined): boolean {
  if (!e) return false;
  const text = `${e.name ?? ''} ${e.code ?? ''} ${e.message ?? ''}`;
  // PostgreSQL shutting down, starting up or cutting connections (SQLSTATE 57P01-57P03, class 08, 53300) reaches
  // us as a Prisma "Database error. Code: `57P03`" or "Server has closed the connection": away, not broken.
  if (/Code: `(57P0[1-3]|08\d{3}|53300)`|Server has closed the connection/.test(text)) return true;
  // The same from the pg driver itself (the hot path's SQL goes straight through the pool): SQLSTATE in `code`.
  if (/^(57P0[1-3]|08\d{3}|53300)$/.test(e.code ?? '') || /the database system is (shutting down|starting up|in recovery)/.test(text)) return true;
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|Connection is closed|Stream isn't writeable|enableOfflineQueue|MaxRetriesPerRequest|CLUSTERDOWN|TRYAGAIN|ClusterAllFailedError|Failed to refresh slots cache|Too many Cluster redirections|Cluster isn't ready|Can't reach database|P1001|P1017|connection terminated|Connection terminated|timeout exceeded when trying to connect|PrismaClientInitializationError|DriverAdapterError/i.test(
    text,
  );
}

export function sendError(res: Response, err: AppError): void {
  const traceId = String(res.locals.traceId ?? '');
  // Both openai SDKs obey it over their own rule (which re-sends every 408 and 409 up to twice).
  res.setHeader('x-should-retry', String(err.retry));
  if (err.headers) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res.status(err.status).json(err.toBody(traceId));
}

export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    if (isBodyAborted(err)) {
      // The client's doing, and no reply can reach it: nothing is sent, so the metrics count the request as 499 too.
      logger.info('client closed request', { method: req.method, path: req.path, status: CLIENT_CLOSED_STATUS, trace_id: res.locals.traceId });
      res.destroy();
      return;
    }
    const appError = toAppError(err);
    // A bug (500) is logged with its stack; an upstream or infrastructure failure (502, 503) is an operating fact.
    if (appError.status === 500) logger.error('request failed', { err, method: req.method, path: req.path, code: appError.code, trace_id: res.locals.traceId });
    else if (appError.status > 500) logger.warn('request failed', { method: req.method, path: req.path, code: appError.code, message: appError.message, trace_id: res.locals.traceId });
    if (res.headersSent) {
      res.end();
      return;
    }
    sendError(res, appError);
  };
}

export function notFoundHandler(req: Request, _res: Response, next: NextFunction): void {
  next(new AppError('NOT_FOUND', `No route ${req.method} ${req.path}`));
}
