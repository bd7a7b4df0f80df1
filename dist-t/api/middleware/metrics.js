"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CLIENT_CLOSED = exports.UNMATCHED_ROUTE = void 0;
exports.metricsMiddleware = metricsMiddleware;
/** The label of requests no route matched (404s, body-parser failures before routing). */
exports.UNMATCHED_ROUTE = 'unmatched';
/** The status label of a request whose client disconnected before the reply ended (e.g. mid-stream). */
exports.CLIENT_CLOSED = '499';
/**
 * Counts requests and their latency by method, route pattern and status. The label is the Express route
 * pattern (`/v1/media/:id`), never the raw URL, so label cardinality stays bounded.
 *
 * The pattern is captured when the router assigns `req.route`: at that moment `req.baseUrl` is the mount
 * path of the router holding the route, which Express restores (empties) again when an error leaves that
 * router, so reading both at `finish` would lose the prefix of routers mounted on a path.
 */
function metricsMiddleware(metrics) {
    return (req, res, next) => {
        const start = process.hrtime.bigint();
        let route;
        let pattern;
        Object.defineProperty(req, 'route', {
            configurable: true,
            enumerable: true,
            get: () => route,
            set: (value) => {
                route = value;
                if (value && value.path !== undefined)
                    pattern = joinPattern(req.baseUrl, value.path);
            },
        });
        // `close` fires for every response; one that did not finish means the client left first (nginx's 499).
        res.once('close', () => {
            const status = res.writableFinished ? String(res.statusCode) : exports.CLIENT_CLOSED;
            const labels = { method: req.method, route: res.locals.metricsRoute ?? pattern ?? exports.UNMATCHED_ROUTE, status };
            metrics.httpRequests.inc(labels);
            metrics.httpDuration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
        });
        next();
    };
}
function joinPattern(base, path) {
    const p = Array.isArray(path) ? path.map(String).join('|') : path instanceof RegExp ? path.source : String(path);
    return `${base ?? ''}${p}` || '/';
}
