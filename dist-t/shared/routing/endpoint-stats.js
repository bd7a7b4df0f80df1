"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.UNHEALTHY_MIN_SAMPLES = exports.UNHEALTHY_FAILURE_RATE = void 0;
exports.samplesInWindow = samplesInWindow;
exports.foldStats = foldStats;
exports.isCoolingDown = isCoolingDown;
exports.isUnhealthy = isUnhealthy;
exports.serializeSample = serializeSample;
exports.parseSample = parseSample;
/** An endpoint is unhealthy with more than half of its attempts failing over at least this many samples. */
exports.UNHEALTHY_FAILURE_RATE = 0.5;
exports.UNHEALTHY_MIN_SAMPLES = 10;
/**
 * Samples in the window `[now - windowMs, ...)`. Samples stamped slightly after `now`
 * (clock skew between processes) are kept.
 */
function samplesInWindow(samples, now, windowMs) {
    const from = now - windowMs;
    return samples.filter((s) => Number.isFinite(s.at) && s.at >= from);
}
/**
 * Fold the samples of one endpoint into its rolling statistics:
 * `samples` counts attempts in the window, `failureRate` is failures / attempts,
 * `latencyMs` and `throughput` are the median (or mean) over successful attempts that carry them.
 */
function foldStats(samples, now, windowMs, aggregate = 'median') {
    const inWindow = samplesInWindow(samples, now, windowMs);
    const stats = { samples: inWindow.length };
    if (inWindow.length === 0)
        return stats;
    const failures = inWindow.filter((s) => !s.ok).length;
    stats.failureRate = failures / inWindow.length;
    const ok = inWindow.filter((s) => s.ok);
    const latency = aggregateOf(values(ok.map((s) => s.ttftMs)), aggregate);
    if (latency !== undefined)
        stats.latencyMs = latency;
    const throughput = aggregateOf(values(ok.map((s) => s.tokensPerSecond)), aggregate);
    if (throughput !== undefined)
        stats.throughput = throughput;
    const retryUntil = Math.max(0, ...inWindow.map((s) => s.retryUntil ?? 0));
    if (retryUntil > now)
        stats.retryAfterUntil = retryUntil;
    return stats;
}
/** Whether the endpoint's last `Retry-After` has not passed yet at `now`. */
function isCoolingDown(stats, now) {
    return stats?.retryAfterUntil !== undefined && stats.retryAfterUntil > now;
}
/**
 * True when the slug is in `unhealthy`, its `Retry-After` has not passed at `now`, or its stats show
 * failureRate > 0.5 over >= 10 samples.
 */
function isUnhealthy(slug, stats, unhealthy, now = Date.now()) {
    if (unhealthy?.has(slug))
        return true;
    if (isCoolingDown(stats, now))
        return true;
    return (stats !== undefined &&
        stats.samples >= exports.UNHEALTHY_MIN_SAMPLES &&
        (stats.failureRate ?? 0) > exports.UNHEALTHY_FAILURE_RATE);
}
/** Compact text form of a sample, for a Redis list. */
function serializeSample(sample) {
    const out = { a: sample.at, o: sample.ok ? 1 : 0 };
    if (sample.ttftMs !== undefined)
        out.t = sample.ttftMs;
    if (sample.tokensPerSecond !== undefined)
        out.s = sample.tokensPerSecond;
    if (sample.retryUntil !== undefined)
        out.r = sample.retryUntil;
    return JSON.stringify(out);
}
/** Inverse of `serializeSample`; `undefined` for anything malformed. */
function parseSample(text) {
    let raw;
    try {
        raw = JSON.parse(text);
    }
    catch {
        return undefined;
    }
    if (typeof raw !== 'object' || raw === null)
        return undefined;
    const r = raw;
    if (!isNum(r.a) || (r.o !== 0 && r.o !== 1))
        return undefined;
    const sample = { at: r.a, ok: r.o === 1 };
    if (isNum(r.t))
        sample.ttftMs = r.t;
    if (isNum(r.s))
        sample.tokensPerSecond = r.s;
    if (isNum(r.r))
        sample.retryUntil = r.r;
    return sample;
}
function isNum(v) {
    return typeof v === 'number' && Number.isFinite(v);
}
function values(list) {
    return list.filter((v) => v !== undefined && Number.isFinite(v) && v >= 0);
}
function aggregateOf(list, aggregate) {
    if (list.length === 0)
        return undefined;
    if (aggregate === 'mean')
        return list.reduce((a, b) => a + b, 0) / list.length;
    const sorted = [...list].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
