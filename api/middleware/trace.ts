import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Tracing } from '../../shared/telemetry/tracing';
import { CLIENT_CLOSED, routeOf } from './metrics';

declare module 'express-serve-static-core' {
  interface Locals {
    /** The request span as a W3C traceparent (tracing on only): a generation's job carries it to the worker. */
    traceparent?: string;
  }
}

/**
 * Gives every request a trace id: in the X-Trace-Id header, in every error body and in every log line. The
 * same id goes out as X-Request-Id, the header the OpenAI SDKs surface as a result's `_request_id` and an
 * error's request id; set first, so every answer carries it: errors, 404s and streams included.
 *
 * Log lines get it explicitly (`trace_id` from res.locals.traceId, or the caller's traceId in the services), not
 * from an AsyncLocalStorage: on Node 20 that turns on promise hooks for every promise in the process.
 *
 * With tracing on (OTEL_EXPORTER_OTLP_ENDPOINT: shared/telemetry), each request also gets a server span, child of
 * the incoming `traceparent` header when there is one; without it this is the whole middleware.
 */
export function traceMiddleware(tracing: Tracing | undefined): RequestHandler {
  return tracing ? (req, res, next) => traced(tracing, req, res, next) : traceIds;
}

function traceIds(_req: Request, res: Response, next: NextFunction): void {
  const traceId = randomUUID();
  res.locals.traceId = traceId;
  res.setHeader('X-Trace-Id', traceId);
  res.setHeader('X-Request-Id', traceId);
  next();
}

/**
 * Requests to the API (`/v1/...`, `/v2/...`) are traced; the operator's dashboard (`/admin`, which polls), the reference's page and
 * assets, health checks, scrapes and a browser's `favicon.ico` are not: they made most of the spans and none of the
 * traces anyone looks for.
 */
export const isTracedPath = (path: string): boolean => /^\/v\d+\//.test(path);

function traced(tracing: Tracing, req: Request, res: Response, next: NextFunction): void {
  if (!isTracedPath(req.path)) return traceIds(req, res, next);
  const incoming = req.headers.traceparent;
  const span = tracing.start(req.method, typeof incoming === 'string' ? incoming : undefined, {
    kind: 'server',
    attributes: { 'http.request.method': req.method, 'url.path': req.path },
  });
  res.locals.traceparent = span.traceparent;
  // `close` fires for every response; one that did not finish means the client left first.
  res.once('close', () => {
    const route = routeOf(req, res);
    const status = res.writableFinished ? res.statusCode : Number(CLIENT_CLOSED);
    span.rename(`${req.method} ${route}`);
    span.set({ 'http.route': route, 'http.response.status_code': status, 'switchyard.trace_id': res.locals.traceId });
    if (status >= 500) span.fail(`HTTP ${status}`, String(status));
    span.end();
  });
  traceIds(req, res, next);
}
