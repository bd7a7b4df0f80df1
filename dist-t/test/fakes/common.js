"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.fakeHungUp = exports.unixNow = exports.strList = exports.num = exports.str = exports.arr = exports.obj = exports.isObj = void 0;
exports.newId = newId;
exports.hangUp = hangUp;
exports.sendRaw = sendRaw;
exports.sendJson = sendJson;
exports.sse = sse;
exports.runStream = runStream;
exports.splitEven = splitEven;
exports.groupEven = groupEven;
const isObj = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
exports.isObj = isObj;
const obj = (v) => ((0, exports.isObj)(v) ? v : {});
exports.obj = obj;
const arr = (v) => (Array.isArray(v) ? v : []);
exports.arr = arr;
const str = (v) => (typeof v === 'string' ? v : undefined);
exports.str = str;
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
exports.num = num;
/** A string-or-array `stop` parameter as a list. */
const strList = (v) => typeof v === 'string' ? [v] : (0, exports.arr)(v).filter((s) => typeof s === 'string' && s.length > 0);
exports.strList = strList;
let seq = 0;
/** Short unique ids with a provider-style prefix (`chatcmpl-…`, `msg_…`). */
function newId(prefix) {
    seq = (seq + 1) % 0x7fffffff;
    return `${prefix}${Date.now().toString(36)}${seq.toString(36).padStart(6, '0')}`;
}
const unixNow = () => Math.floor(Date.now() / 1000);
exports.unixNow = unixNow;
// ---------- replies ----------
const hungUp = new WeakSet();
/** The fake itself drops the connection (failure knobs): not an abort by the client. */
function hangUp(res) {
    hungUp.add(res);
    res.destroy();
}
/** Whether the fake dropped this connection itself. */
const fakeHungUp = (res) => hungUp.has(res);
exports.fakeHungUp = fakeHungUp;
/** Plain JSON reply, never subject to the failure knobs (used for errors). */
function sendRaw(ctx, status, body, headers, type = 'application/json') {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    ctx.res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text), ...headers });
    ctx.res.end(text);
}
/** Success JSON reply: honours `malformed` (truncated JSON) and `failMidStream` (half a body, then a reset). */
function sendJson(ctx, status, body, headers) {
    const { knobs, failing, res } = ctx;
    if (!failing || (!knobs.malformed && !knobs.failMidStream))
        return sendRaw(ctx, status, body, headers);
    const text = JSON.stringify(body);
    const half = text.slice(0, Math.max(1, text.length >> 1));
    if (knobs.malformed)
        return sendRaw(ctx, status, half, headers);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
    res.write(half);
    void ctx.sleep(10).then(() => hangUp(res));
}
// ---------- streaming ----------
/** One SSE frame: `event: name\ndata: json\n\n` (no event line when name is null). */
function sse(event, data, eol = '\n') {
    const json = typeof data === 'string' ? data : JSON.stringify(data);
    return event === null ? `data: ${json}${eol}${eol}` : `event: ${event}${eol}data: ${json}${eol}${eol}`;
}
/** A frame cut in the middle of its JSON, for the `malformed` knob. */
function brokenFrame(frame) {
    const at = frame.lastIndexOf('data: ');
    const end = frame.endsWith('\r\n\r\n') ? '\r\n\r\n' : '\n\n';
    if (at < 0)
        return frame.slice(0, Math.max(1, frame.length >> 1)); // JSON-array streams
    return `${frame.slice(0, at + 6 + Math.max(1, (frame.length - at - 6 - end.length) >> 1))}${end}`;
}
const waitDrain = (res) => new Promise((resolve) => {
    const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
    };
    res.on('drain', done);
    res.on('close', done);
});
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
/**
 * Writes a stream: head frames, `count` deltas (with `chunkDelayMs` between them), tail frames.
 * `malformed` adds a broken copy of the first delta; `failMidStream` resets the socket halfway.
 */
async function runStream(ctx, plan) {
    const { res, knobs } = ctx;
    const endless = knobs.endlessStream === true;
    const failMid = ctx.failing && knobs.failMidStream === true;
    const malformed = ctx.failing && knobs.malformed === true;
    const delay = knobs.chunkDelayMs ?? 0;
    const cut = Math.max(1, plan.count >> 1);
    let closed = false;
    res.once('close', () => (closed = true));
    res.writeHead(200, { 'content-type': plan.contentType ?? 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    for (const frame of plan.head)
        res.write(frame);
    for (let i = 0; endless || i < plan.count; i++) {
        if (i > 0) {
            if (delay > 0)
                await ctx.sleep(delay);
            else if (endless)
                await nextTurn();
        }
        if (closed)
            return;
        if (failMid && i === cut)
            return resetSoon(ctx);
        const frame = plan.delta(i, !endless && i === plan.count - 1);
        let ok = res.write(frame);
        if (malformed && i === 0)
            ok = res.write(brokenFrame(frame));
        if (!ok)
            await waitDrain(res);
    }
    if (closed)
        return;
    if (failMid)
        return resetSoon(ctx);
    for (const frame of plan.tail())
        res.write(frame);
    res.end();
}
/** Lets already written bytes reach the client, then destroys the socket. */
async function resetSoon(ctx) {
    await ctx.sleep(10);
    hangUp(ctx.res);
}
/** Splits `text` into exactly `n` contiguous pieces (some empty when the text is shorter than n). */
function splitEven(text, n) {
    const parts = Math.max(1, Math.floor(n));
    const out = [];
    for (let i = 0; i < parts; i++)
        out.push(text.slice(Math.floor((i * text.length) / parts), Math.floor(((i + 1) * text.length) / parts)));
    return out;
}
/** Splits a list into at most `n` contiguous non-empty groups. */
function groupEven(items, n) {
    const parts = Math.max(1, Math.min(Math.floor(n), items.length));
    const out = [];
    for (let i = 0; i < parts; i++)
        out.push(items.slice(Math.floor((i * items.length) / parts), Math.floor(((i + 1) * items.length) / parts)));
    return out;
}
