"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.createUpstreamClient = createUpstreamClient;
exports.joinUpstreamUrl = joinUpstreamUrl;
/**
 * The only I/O of the provider layer: performs the `HttpRequestSpec`s the adapters describe, over one undici
 * `Agent` (a keep-alive connection pool per origin). Every failure leaves here as an `UpstreamError`.
 */
const undici_1 = require("undici");
const sse_1 = require("./sse");
const upstream_error_1 = require("./upstream-error");
const DEFAULT_KEEP_ALIVE_MS = 10_000;
function createUpstreamClient(options = {}) {
    const keepAlive = options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_MS;
    const agent = new undici_1.Agent({
        connections: options.connectionsPerOrigin ?? null,
        keepAliveTimeout: keepAlive,
        keepAliveMaxTimeout: Math.max(keepAlive, 1_000),
    });
    return {
        async request(baseUrl, spec, call) {
            const deadline = new AbortController();
            let timedOut = false;
            const timer = setTimeout(() => {
                timedOut = true;
                deadline.abort();
            }, call.timeoutMs);
            const signal = call.signal ? AbortSignal.any([call.signal, deadline.signal]) : deadline.signal;
            const failure = (error) => (timedOut ? (0, upstream_error_1.upstreamError)({ kind: 'timeout', timeoutMs: call.timeoutMs }, { cause: error }) : toUpstreamError(error, call));
            try {
                const res = await send(agent, baseUrl, spec, call, signal);
                const text = await res.body.text();
                const headers = flattenHeaders(res.headers);
                if (!isSuccess(res.statusCode))
                    throw replyError(res.statusCode, headers, text, call);
                let json;
                try {
                    json = JSON.parse(text);
                }
                catch {
                    throw (0, upstream_error_1.upstreamError)({ kind: 'malformed', message: `HTTP ${res.statusCode} reply is not JSON`, raw: text });
                }
                return { status: res.statusCode, headers, json, text };
            }
            catch (error) {
                throw failure(error);
            }
            finally {
                clearTimeout(timer);
            }
        },
        async stream(baseUrl, spec, call) {
            let res;
            try {
                res = await send(agent, baseUrl, spec, call, call.signal);
            }
            catch (error) {
                throw toUpstreamError(error, call);
            }
            if (!isSuccess(res.statusCode)) {
                let text = '';
                try {
                    text = await res.body.text();
                }
                catch {
                    // the status alone classifies it
                }
                throw replyError(res.statusCode, flattenHeaders(res.headers), text, call);
            }
            return sseEvents(res.body, call);
        },
        close: () => agent.close(),
    };
}
/** `http://host/openai/v1` + `/chat/completions` → origin `http://host`, path `/openai/v1/chat/completions` (a base query is kept). */
function joinUpstreamUrl(baseUrl, path) {
    const base = new URL(baseUrl);
    const basePath = base.pathname.replace(/\/+$/, '');
    const relative = path.startsWith('/') ? path : `/${path}`;
    if (!base.search)
        return { origin: base.origin, path: basePath + relative };
    const [pathPart, query] = splitOnce(relative, '?');
    return { origin: base.origin, path: `${basePath}${pathPart}${base.search}${query ? `&${query}` : ''}` };
}
function splitOnce(text, separator) {
    const at = text.indexOf(separator);
    return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}
function send(agent, baseUrl, spec, call, signal) {
    if (call.signal?.aborted)
        return Promise.reject((0, upstream_error_1.abortedError)(call.signal.reason));
    const target = joinUpstreamUrl(baseUrl, spec.path);
    const headers = { ...spec.headers };
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
        headers['content-type'] = 'application/json';
    return agent.request({
        origin: target.origin,
        path: target.path,
        method: spec.method,
        headers,
        body,
        signal,
        headersTimeout: call.timeoutMs,
        bodyTimeout: call.timeoutMs,
    });
}
async function* sseEvents(body, call) {
    const parser = new sse_1.SseParser();
    const chunks = body[Symbol.asyncIterator]();
    let complete = false;
    try {
        for (;;) {
            let next;
            try {
                next = await chunks.next();
            }
            catch (error) {
                throw toUpstreamError(error, call);
            }
            if (next.done)
                break;
            const chunk = next.value;
            yield* parser.push(typeof chunk === 'string' ? chunk : chunk);
        }
        complete = true;
        yield* parser.end();
    }
    finally {
        // Leaving early (break, error, cancellation) frees the connection instead of draining the stream.
        if (!complete && !body.destroyed)
            body.destroy();
    }
}
function replyError(status, headers, text, call) {
    const retryAfterMs = (0, upstream_error_1.parseRetryAfter)(headers['retry-after'], Date.now());
    const problem = { kind: 'reply', status, body: text, ...(call.extractError && { extract: call.extractError }) };
    return (0, upstream_error_1.upstreamError)(problem, retryAfterMs === undefined ? {} : { retryAfterMs });
}
function toUpstreamError(error, call) {
    if ((0, upstream_error_1.isUpstreamError)(error))
        return error;
    if (call.signal?.aborted)
        return (0, upstream_error_1.abortedError)(error);
    return (0, upstream_error_1.upstreamError)({ kind: 'network', error }, { cause: error });
}
function isSuccess(status) {
    return status >= 200 && status < 300;
}
function flattenHeaders(headers) {
    const flat = {};
    for (const [name, value] of Object.entries(headers)) {
        if (value !== undefined)
            flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
    return flat;
}
