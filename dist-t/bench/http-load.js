"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.percentiles = percentiles;
exports.runLoad = runLoad;
/**
 * A small closed-loop HTTP/1.1 load generator on raw sockets: `concurrency` keep-alive connections, each
 * sending its next request as soon as the previous reply ends. It runs in its own process (pinned to the
 * other core by bench/run.ts) so it never steals the gateway's CPU. Prints one JSON result line.
 *
 *   node dist/bench/http-load.js '{"url":"http://127.0.0.1:3000/v1/chat/completions","body":{...},
 *                                  "headers":{...},"concurrency":32,"durationMs":10000,"stream":false}'
 */
const node_net_1 = __importDefault(require("node:net"));
function percentiles(values) {
    const v = [...values].sort((a, b) => a - b);
    const at = (q) => (v.length ? v[Math.min(v.length - 1, Math.floor(q * v.length))] : NaN);
    const mean = v.reduce((a, b) => a + b, 0) / (v.length || 1);
    const r = (x) => Math.round(x * 1000) / 1000;
    return { p50: r(at(0.5)), p90: r(at(0.9)), p99: r(at(0.99)), mean: r(mean) };
}
/** Reads one HTTP/1.1 response (content-length or chunked) from a socket's data stream. */
class ResponseReader {
    marker;
    done;
    buf = Buffer.alloc(0);
    headerDone = false;
    status = 0;
    length = -1;
    chunked = false;
    bodyBytes = 0;
    bodyText = '';
    firstContentAt = 0;
    constructor(marker, done) {
        this.marker = marker;
        this.done = done;
    }
    push(chunk) {
        this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
        if (!this.headerDone) {
            const end = this.buf.indexOf('\r\n\r\n');
            if (end < 0)
                return;
            const head = this.buf.subarray(0, end).toString('latin1');
            this.status = Number(head.slice(9, 12));
            const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
            this.length = cl ? Number(cl[1]) : -1;
            this.chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head);
            this.headerDone = true;
            this.buf = this.buf.subarray(end + 4);
        }
        if (this.marker && !this.firstContentAt) {
            this.bodyText += this.buf.toString('utf8');
            if (this.bodyText.includes(this.marker))
                this.firstContentAt = performance.now();
        }
        if (this.chunked) {
            // The last chunk is `0\r\n\r\n`; bodies here never contain that sequence mid-stream.
            if (this.buf.includes('\r\n0\r\n\r\n') || this.buf.subarray(0, 5).toString() === '0\r\n\r\n')
                return this.finish();
            this.buf = this.buf.subarray(Math.max(0, this.buf.length - 8));
            return;
        }
        this.bodyBytes += this.buf.length;
        this.buf = Buffer.alloc(0);
        if (this.length >= 0 && this.bodyBytes >= this.length)
            this.finish();
    }
    finish() {
        this.done(this.status);
    }
}
async function runLoad(cfg) {
    const u = new URL(cfg.url);
    const body = Buffer.from(JSON.stringify(cfg.body));
    const head = `POST ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
        Object.entries(cfg.headers ?? {})
            .map(([k, v]) => `${k}: ${v}\r\n`)
            .join('') +
        '\r\n';
    const request = Buffer.concat([Buffer.from(head), body]);
    const latencies = [];
    const ttfbs = [];
    const statuses = {};
    let errors = 0;
    const warmupEnd = performance.now() + (cfg.warmupMs ?? 1000);
    const end = warmupEnd + cfg.durationMs;
    const worker = () => new Promise((resolve) => {
        const socket = node_net_1.default.connect(Number(u.port), u.hostname);
        socket.setNoDelay(true);
        let reader;
        let started = 0;
        const next = () => {
            if (performance.now() >= end) {
                socket.end();
                return resolve();
            }
            started = performance.now();
            reader = new ResponseReader(cfg.stream ? cfg.ttfbMarker : undefined, (status) => {
                const now = performance.now();
                if (started >= warmupEnd) {
                    latencies.push(now - started);
                    statuses[status] = (statuses[status] ?? 0) + 1;
                    if (status >= 400)
                        errors++;
                    if (reader.firstContentAt)
                        ttfbs.push(reader.firstContentAt - started);
                }
                next();
            });
            socket.write(request);
        };
        socket.on('data', (c) => reader.push(c));
        socket.on('error', () => {
            errors++;
            resolve();
        });
        socket.on('connect', next);
    });
    await Promise.all(Array.from({ length: cfg.concurrency }, worker));
    const seconds = cfg.durationMs / 1000;
    return {
        requests: latencies.length,
        errors,
        statuses,
        seconds,
        rps: Math.round(latencies.length / seconds),
        latencyMs: percentiles(latencies),
        ttfbMs: cfg.stream ? percentiles(ttfbs) : undefined,
    };
}
if (require.main === module) {
    runLoad(JSON.parse(process.argv[2])).then((r) => process.stdout.write(`${JSON.stringify(r)}\n`), (e) => {
        process.stderr.write(`${e.message}\n`);
        process.exit(1);
    });
}
