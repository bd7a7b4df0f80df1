import type { Express, NextFunction, Request, Response } from 'express';
import type { Metrics } from '../../shared/metrics/metrics';
import { CLIENT_CLOSED_STATUS } from './client-gone';

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
      if (value && value.path !== undefined) this[PATTERN] = joinPattern(this.baseUrl, value.path);
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

function joinPattern(base: string, path: unknown): string {
  const p = Array.isArray(path) ? path.map(String).join('|') : path instanceof RegExp ? path.source : String(path);
  return `${base ?? ''}${p}` || '/';
}
