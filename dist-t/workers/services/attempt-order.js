"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.AttemptOrder = exports.RETRY_AFTER_MAX_WAIT_MS = void 0;
exports.waitFor = waitFor;
exports.retryAfterSeconds = retryAfterSeconds;
const promises_1 = require("node:timers/promises");
/**
 * The longest a job waits for an endpoint's `Retry-After` when nothing else can answer (a longer wait fails
 * the job at once, with the wait in the error's `Retry-After`).
 */
exports.RETRY_AFTER_MAX_WAIT_MS = 5_000;
/**
 * The order a job tries its planned endpoints in, honouring `Retry-After`: an endpoint that asked not to be
 * called yet is tried after every other one; when only such endpoints are left, the job waits for the first of
 * them up to RETRY_AFTER_MAX_WAIT_MS, or skips it. An endpoint that answered 429/503 with a short
 * `Retry-After` and was the last hope is tried once more after that wait.
 */
class AttemptOrder {
    retryAfterUntil;
    now;
    pending;
    retried = false;
    constructor(candidates, 
    /** Epoch ms before which the endpoint may not be called, or 0. */
    retryAfterUntil, now = Date.now) {
        this.retryAfterUntil = retryAfterUntil;
        this.now = now;
        this.pending = [...candidates];
    }
    next() {
        if (this.pending.length === 0)
            return undefined;
        const now = this.now();
        const ready = this.pending.findIndex((c) => this.retryAfterUntil(c.slug) <= now);
        if (ready >= 0)
            return { candidate: this.pending.splice(ready, 1)[0], waitMs: 0 };
        // Every endpoint left is cooling down: the one free soonest.
        let soonest = 0;
        for (let i = 1; i < this.pending.length; i++)
            if (this.retryAfterUntil(this.pending[i].slug) < this.retryAfterUntil(this.pending[soonest].slug))
                soonest = i;
        const candidate = this.pending.splice(soonest, 1)[0];
        const wait = this.retryAfterUntil(candidate.slug) - now;
        return wait <= exports.RETRY_AFTER_MAX_WAIT_MS ? { candidate, waitMs: wait } : { candidate, skipMs: wait };
    }
    /** After `candidate` failed with a `Retry-After`: when it was the last hope, try it once more (after the wait). */
    failedWithRetryAfter(candidate, retryAfterMs) {
        if (this.pending.length === 0 && !this.retried && retryAfterMs <= exports.RETRY_AFTER_MAX_WAIT_MS) {
            this.retried = true;
            this.pending.push(candidate);
        }
    }
}
exports.AttemptOrder = AttemptOrder;
/** Waits `ms`, or less when `signal` aborts (the caller then sees `signal.aborted`). */
async function waitFor(ms, signal) {
    if (ms <= 0)
        return;
    await (0, promises_1.setTimeout)(ms, undefined, { signal }).catch(() => undefined);
}
/** `Retry-After` seconds for an error: the soonest any of these endpoints accepts calls again, or undefined. */
function retryAfterSeconds(slugs, retryAfterUntil, now = Date.now()) {
    const waits = slugs.map((s) => retryAfterUntil(s) - now).filter((ms) => ms > 0);
    return waits.length ? Math.max(1, Math.ceil(Math.min(...waits) / 1000)) : undefined;
}
