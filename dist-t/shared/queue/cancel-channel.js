"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.isStopReason = isStopReason;
exports.cancelChannel = cancelChannel;
exports.publishStop = publishStop;
exports.listenForStops = listenForStops;
exports.stopReasonOf = stopReasonOf;
const STOP_REASONS = new Set(['cancelled', 'timeout', 'client_gone']);
function isStopReason(v) {
    return typeof v === 'string' && STOP_REASONS.has(v);
}
/** One channel per deployment (queue prefix): every worker process listens, the one running the job acts. */
function cancelChannel(prefix) {
    return `${prefix}:cancel`;
}
/** API side: asks whichever worker runs generation `id` to abort its upstream call. */
function publishStop(redis, prefix, id, reason) {
    const message = { id, reason };
    return redis.publish(cancelChannel(prefix), JSON.stringify(message)).catch(() => undefined);
}
/**
 * Worker side: subscribes `sub` (a connection of its own, in subscriber mode from now on) and calls `onStop` for
 * every well-formed message. Resolves once subscribed.
 */
async function listenForStops(sub, prefix, onStop) {
    const channel = cancelChannel(prefix);
    sub.on('message', (from, text) => {
        if (from !== channel)
            return;
        let m;
        try {
            m = JSON.parse(text);
        }
        catch {
            return;
        }
        if (typeof m.id === 'string' && isStopReason(m.reason))
            onStop(m.id, m.reason);
    });
    await sub.subscribe(channel);
}
/** The stop reason of an aborted job signal (`cancelled` for anything else, e.g. a shutdown). */
function stopReasonOf(signal) {
    if (!signal?.aborted)
        return undefined;
    return isStopReason(signal.reason) ? signal.reason : 'cancelled';
}
