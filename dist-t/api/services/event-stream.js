"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.openEventStream = openEventStream;
/**
 * Starts a Server-Sent Events reply: status, headers (no buffering by proxies), flushed at once. Returns whether
 * the client has gone; `onGone` runs once when the connection drops before the reply ended.
 */
function openEventStream(res, onGone) {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    let gone = false;
    // `res` closes when the reply ends or the connection drops (a request's own 'close' fires once its body is read).
    res.on('close', () => {
        if (res.writableEnded)
            return;
        gone = true;
        onGone?.();
    });
    return () => gone;
}
