/** Every request's telemetry: its metrics (route, status, latency) and its trace id (and span, with tracing on). */
import type { Express, NextFunction, Request, Response, RequestHandler } from 'express';
import type { Metrics } from '../../shared/metrics/metrics';
import { CLIENT_CLOSED_STATUS } from './client-gone';
import { randomUUID } from 'node:crypto';
import type { Tracing } from '../../shared/telemetry/tracing';

declare module 'express-serve-static-core' {
  interface Locals {
    /** Overrides the route label, e.g. for a mounted sub-app whose own routes we do not want as labels. */
    metricsRoute?: string;
  }
}

/** The label of requests no route matched (404s, body-parser failures before routing). */
export const UNMATCHED_ROUTE = 'unmatched';
/** The status label of a request whose client disconnected before the reply ended (mid-body, mid-stream). */
export const CLIENT_CLOSED = String(CLIENT_CLOSED_STATUS);

/** Where a request keeps the route the router assigned it and that route's full pattern (the accessor below). */
const ROUTE = Symbol('route');
const PATTERN = Symbol('routePattern');
type Tracked = Request & { [ROUTE]?: unknown; [PATTERN]?: string };

/**
 * Counts requests and their latency by method, route pattern and status. The label is the Express route
 * pattern (`/v1/media/:id`), never the raw URL, so label cardinality stays bounded.
 *
 * The pattern is captured when the router assigns `req.route`: at that moment `req.baseUrl` is the mount
 * path of the router holding the route, which Express restores (empties) again when an error leaves that
 * router, so reading both at `finish` would lose the prefix of routers mounted on a path. The assignment is caught
 * by an accessor defined once on the app's request prototype (`app.request`, which Express's sub-apps inherit from),
 * not by one defined on each request: a per-request accessor gives every request object a map of its own, and V8
 * then keeps the request and all it references through young-generation collections (bench/rounds/06-what-v8-kept.md).
 */
export function metricsMiddleware(metrics: Metrics, app: Pick<Express, 'request'>) {
  Object.defineProperty(app.request, 'route', {
    configurable: true,
    enumerable: true,
    get(this: Tracked) {
      return this[ROUTE];
    },
    set(this: Tracked, value: { path?: unknown } | undefined) {
      this[ROUTE] = value;
      if (value && value.path !== undefined) {
        const path = value.path;
        const p = Array.isArray(path) ? path.map(String).join('|') : path instanceof RegExp ? path.source : String(path);
        this[PATTERN] = `${this.baseUrl ?? ''}${p}` || '/';
      }
    },
  });
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = process.hrtime.bigint();
    // `close` fires for every response; one that did not finish means the client left first (nginx's 499).
    res.once('close', () => {
      const status = res.writableFinished ? String(res.statusCode) : CLIENT_CLOSED;
      const labels = { method: req.method, route: routeOf(req, res), status };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
}

/** The request's route pattern (`/v1/media/:id`), once the router matched it; UNMATCHED_ROUTE before or without one. */
export function routeOf(req: Request, res: Response): string {
  return res.locals.metricsRoute ?? (req as Tracked)[PATTERN] ?? UNMATCHED_ROUTE;
}

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
