/** Every request's telemetry: its metrics (route, status, latency) and its trace id (and span, with tracing on). */
import type { Express, NextFunction, Request, Response, RequestHandler } from 'express';
import type { Metrics } from '../../shared/metrics/metrics';
import { CLIENT_CLOSED_STATUS } from './client-gone';
import { randomUUID } from 'node:crypto';
import type { TraceSpan, Tracing } from '../../shared/telemetry/tracing';

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
 * Every request's telemetry, in one middleware (the app's first): its trace id, its metrics and, with tracing on, its
 * span. They always ran together, in that order, as two middlewares.
 *
 * The trace id: in the X-Trace-Id header, in every error body and in every log line. The same id goes out as
 * X-Request-Id, the header the OpenAI SDKs surface as a result's `_request_id` and an error's request id; set first,
 * so every answer carries it: errors, 404s and streams included. Log lines get it explicitly (`trace_id` from
 * res.locals.traceId, or the caller's traceId in the services), not from an AsyncLocalStorage: on Node 20 that turns
 * on promise hooks for every promise in the process.
 *
 * The metrics count requests and their latency by method, route pattern and status. The label is the Express route
 * pattern (`/v1/media/:id`), never the raw URL, so label cardinality stays bounded.
 *
 * The pattern is captured when the router assigns `req.route`: at that moment `req.baseUrl` is the mount
 * path of the router holding the route, which Express restores (empties) again when an error leaves that
 * router, so reading both at `finish` would lose the prefix of routers mounted on a path. The assignment is caught
 * by an accessor defined once on the app's request prototype (`app.request`, which Express's sub-apps inherit from),
 * not by one defined on each request: a per-request accessor gives every request object a map of its own, and V8
 * then keeps the request and all it references through young-generation collections (bench/rounds/06-what-v8-kept.md).
 *
 * With tracing on (OTEL_EXPORTER_OTLP_ENDPOINT: shared/telemetry), each request to the API also gets a server span
 * (serverSpan), child of the incoming `traceparent` header when there is one.
 */
export function telemetryMiddleware(metrics: Metrics, app: Pick<Express, 'request'>, tracing: Tracing | undefined): RequestHandler {
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
    const span = tracing && isTracedPath(req.path) ? serverSpan(tracing, req, res) : undefined;
    const traceId = randomUUID();
    res.locals.traceId = traceId;
    res.setHeader('X-Trace-Id', traceId);
    res.setHeader('X-Request-Id', traceId);
    const start = process.hrtime.bigint();
    // `close` fires for every response; one that did not finish means the client left first (nginx's 499).
    res.once('close', () => {
      const route = routeOf(req, res);
      const status = res.writableFinished ? String(res.statusCode) : CLIENT_CLOSED;
      if (span) {
        span.rename(`${req.method} ${route}`);
        span.set({ 'http.route': route, 'http.response.status_code': Number(status), 'switchyard.trace_id': res.locals.traceId });
        if (Number(status) >= 500) span.fail(`HTTP ${status}`, status);
        span.end();
      }
      const labels = { method: req.method, route, status };
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
 * Requests to the API (`/v1/...`, `/v2/...`) are traced; the operator's dashboard (`/admin`, which polls), the reference's page and
 * assets, health checks, scrapes and a browser's `favicon.ico` are not: they made most of the spans and none of the
 * traces anyone looks for.
 */
export const isTracedPath = (path: string): boolean => /^\/v\d+\//.test(path);

/** The server span of a request to the API; telemetryMiddleware ends it when the request closes. */
function serverSpan(tracing: Tracing, req: Request, res: Response): TraceSpan {
  const incoming = req.headers.traceparent;
  const span = tracing.start(req.method, typeof incoming === 'string' ? incoming : undefined, {
    kind: 'server',
    attributes: { 'http.request.method': req.method, 'url.path': req.path },
  });
  res.locals.traceparent = span.traceparent;
  return span;
}
