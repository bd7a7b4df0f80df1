"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.startFakeProvider = startFakeProvider;
/**
 * Fake upstream AI provider: one real `node:http` server speaking four wire formats on distinct
 * base paths — OpenAI `/openai/v1`, Anthropic `/anthropic/v1`, Gemini `/gemini/v1beta`,
 * Replicate `/replicate/v1` — plus generated files at `/files/<name>.<ext>` and a small control
 * API at `/_fake/{knobs,reset,requests,aborted}` for out-of-process use (see main.ts).
 */
const node_http_1 = require("node:http");
const common_1 = require("./common");
const anthropic_1 = require("./anthropic");
const gemini_1 = require("./gemini");
const openai_1 = require("./openai");
const replicate_1 = require("./replicate");
const synth_1 = require("./synth");
const FORMATS = [openai_1.openai, anthropic_1.anthropic, gemini_1.gemini, replicate_1.replicate];
const MAX_RECORDED = 1000;
function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
        req.on('error', reject);
    });
}
/** The injected error status: `status`, or 500 when only `failTimes` is set. */
function failStatus(k) {
    if (k.status !== undefined)
        return k.status >= 400 ? k.status : undefined;
    return k.failTimes !== undefined && !(k.malformed || k.hang || k.resetConnection || k.failMidStream) ? 500 : undefined;
}
const isFailure = (k) => failStatus(k) !== undefined || !!(k.malformed || k.hang || k.resetConnection || k.failMidStream);
async function startFakeProvider(opts = {}) {
    const host = opts.host ?? '127.0.0.1';
    let knobs = { ...opts.knobs };
    let seen = 0; // API requests since the knobs were set, for failTimes
    let baseUrl = '';
    const requests = [];
    const shared = { predictions: new Map(), cancels: [] };
    const aborted = [];
    let closing = false;
    const timers = new Set();
    const sleep = (ms) => new Promise((resolve) => {
        const t = setTimeout(() => {
            timers.delete(t);
            resolve();
        }, ms);
        timers.add(t);
    });
    const setKnobs = (k) => {
        knobs = { ...k };
        seen = 0;
    };
    async function handle(req, res) {
        const raw = await readBody(req);
        const url = req.url ?? '/';
        const q = url.indexOf('?');
        const path = q < 0 ? url : url.slice(0, q);
        const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
        let body;
        if (raw.length > 0) {
            const text = raw.toString('utf8');
            try {
                body = JSON.parse(text);
            }
            catch {
                body = text;
            }
        }
        const method = req.method ?? 'GET';
        const ctx = { req, res, method, path, query, body, knobs, failing: false, baseUrl, sleep, shared };
        if (path.startsWith('/files/')) {
            if (knobs.fileLatencyMs)
                await sleep(knobs.fileLatencyMs);
            return serveFile(ctx, path.slice(7));
        }
        if (path.startsWith('/_fake/'))
            return control(ctx, path.slice(6));
        const record = { method, path, query: Object.fromEntries(query), headers: req.headers, body };
        requests.push(record);
        if (requests.length > MAX_RECORDED)
            requests.shift();
        res.once('close', () => {
            if (res.writableFinished || (0, common_1.fakeHungUp)(res) || closing)
                return;
            aborted.push(record);
            if (aborted.length > MAX_RECORDED)
                aborted.shift();
        });
        let format;
        for (const f of FORMATS) {
            const prefix = f.prefixes.find((p) => path.startsWith(p) && (path.length === p.length || path[p.length] === '/'));
            if (prefix === undefined)
                continue;
            format = f;
            ctx.path = path.slice(prefix.length) || '/';
            break;
        }
        if (!format)
            return (0, common_1.sendRaw)(ctx, 404, { error: { message: `No fake provider route for ${method} ${path}` } });
        ctx.failing = isFailure(knobs) && (knobs.failTimes === undefined || seen < knobs.failTimes);
        seen++;
        if (knobs.latencyMs)
            await sleep(knobs.latencyMs);
        if (res.destroyed)
            return;
        if (ctx.failing && knobs.hang)
            return; // hold the socket until the client or close() drops it
        if (ctx.failing && knobs.resetConnection)
            return (0, common_1.hangUp)(res);
        if (!format.auth(ctx))
            return;
        const status = ctx.failing ? failStatus(knobs) : undefined;
        if (status !== undefined) {
            if (knobs.retryAfterSeconds !== undefined)
                res.setHeader('retry-after', String(knobs.retryAfterSeconds));
            return format.error(ctx, status);
        }
        await format.handle(ctx);
    }
    function serveFile(ctx, name) {
        const media = synth_1.MEDIA[name.slice(name.lastIndexOf('.') + 1).toLowerCase()];
        if (!media || (ctx.method !== 'GET' && ctx.method !== 'HEAD') || name.includes('/'))
            return (0, common_1.sendRaw)(ctx, 404, { error: { message: 'file not found' } });
        ctx.res.writeHead(200, { 'content-type': media.type, 'content-length': media.bytes.length, 'cache-control': 'public, max-age=3600' });
        ctx.res.end(ctx.method === 'HEAD' ? undefined : media.bytes);
    }
    function control(ctx, what) {
        const { method, body } = ctx;
        if (method === 'POST' && what === '/knobs' && (0, common_1.isObj)(body))
            setKnobs(body);
        else if (method === 'POST' && what === '/reset')
            provider.reset();
        else if (method === 'GET' && what === '/requests')
            return (0, common_1.sendRaw)(ctx, 200, requests);
        else if (method === 'GET' && what === '/aborted')
            return (0, common_1.sendRaw)(ctx, 200, aborted);
        else if (method !== 'GET' || what !== '/knobs')
            return (0, common_1.sendRaw)(ctx, 404, { error: { message: 'unknown control route' } });
        (0, common_1.sendRaw)(ctx, 200, knobs);
    }
    const server = (0, node_http_1.createServer)({ noDelay: true, requestTimeout: 0 }, (req, res) => {
        handle(req, res).catch((err) => {
            if (res.headersSent)
                return void res.destroy();
            const message = err instanceof Error ? err.message : String(err);
            res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `fake provider crashed: ${message}` } }));
        });
    });
    server.keepAliveTimeout = 60_000;
    server.headersTimeout = 61_000;
    await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port ?? 0, host, () => {
            server.off('error', reject);
            resolve();
        });
    });
    const port = server.address().port;
    baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const provider = {
        url: baseUrl,
        port,
        requests,
        replicateCancels: shared.cancels,
        replicatePredictions: shared.predictions,
        aborted,
        async waitForAborted(n, timeoutMs = 5_000) {
            const until = Date.now() + timeoutMs;
            while (aborted.length < n) {
                if (Date.now() > until)
                    throw new Error(`expected ${n} aborted upstream requests, saw ${aborted.length}`);
                await new Promise((r) => setTimeout(r, 20));
            }
            return aborted;
        },
        setKnobs,
        reset() {
            setKnobs({});
            requests.length = 0;
            aborted.length = 0;
            shared.predictions.clear();
            shared.cancels.length = 0;
        },
        close() {
            closing = true;
            for (const t of timers)
                clearTimeout(t);
            timers.clear();
            return new Promise((resolve) => {
                server.close(() => resolve());
                server.closeAllConnections();
            });
        },
    };
    return provider;
}
