/** What the routes share: the caller of a request (`callerOf`) and routers entered only by their own paths (`gated`). */
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import type { Caller } from '../services/generation-order';

/** The caller of an authenticated request, as the guard left it on `res.locals` (principal, trace id and span, Idempotency-Key). */
export function callerOf(res: Response): Caller {
  return { principal: res.locals.principal, traceId: res.locals.traceId, traceparent: res.locals.traceparent, idempotency: res.locals.idempotency };
}

interface LayerPaths {
  rawPath?: unknown;
}

/** Characters that start a parameter, wildcard, group or escape in an Express 5 (path-to-regexp 8) path. */
const SPECIAL = /[:*{}()[\]+?!\\]/;

/** The literal beginning of a layer's path, without trailing slashes (Express matches them loosely); '' if none. */
function literalPrefixes(layer: LayerPaths): string[] {
  const paths = Array.isArray(layer.rawPath) ? layer.rawPath.flat(Infinity) : [layer.rawPath];
  return paths.map((p) => {
    if (typeof p !== 'string') return '';
    const at = p.search(SPECIAL);
    return (at < 0 ? p : p.slice(0, at)).replace(/\/+$/, '');
  });
}

/**
 * `router`, entered only by a request whose path begins as one of its layers' paths does. Express otherwise walks
 * (and regex-matches) every route of every router mounted before the one that answers, for every request. The
 * test is case-insensitive as Express's matching is and uses only the literal part of each path, so every path the
 * router could match gets in; a layer without a literal beginning (a regular expression, a bare `use`) lets all in.
 * `stack` stays visible for api/openapi/list-routes.ts.
 */
export function gated(router: Router): RequestHandler & { stack: unknown[] } {
  const prefixes = [...new Set(router.stack.flatMap((layer) => literalPrefixes(layer as LayerPaths)))];
  if (prefixes.includes('')) return router;
  const pattern = new RegExp(`^(?:${prefixes.map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})`, 'i');
  const enter = (req: Request, res: Response, next: NextFunction): void => {
    if (pattern.test(req.path)) router(req, res, next);
    else next();
  };
  return Object.assign(enter, { stack: router.stack });
}
