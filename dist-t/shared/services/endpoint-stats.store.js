"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EndpointStatsStore = void 0;
const endpoint_stats_1 = require("../routing/endpoint-stats");
const KEEP = 200;
const WINDOW_MS = 10 * 60_000;
const REFRESH_MS = 5_000;
/** How long samples wait in memory before one pipelined write (readers refresh every REFRESH_MS anyway). */
const FLUSH_MS = 200;
/**
 * Rolling per-endpoint statistics in Redis (a capped list of samples per endpoint), shared by every process,
 * plus the stickiness map (prompt_cache_key / session_id → endpoint). Readers keep a 5-second local copy so
 * routing never waits on Redis for statistics.
 */
class EndpointStatsStore {
    redis;
    prefix;
    cache = { at: 0, stats: {} };
    refreshing;
    constructor(redis, prefix) {
        this.redis = redis;
        this.prefix = prefix;
    }
    /** Local `Retry-After` deadlines this process has seen (immediate; others learn them through the samples). */
    retryUntil = new Map();
    /** Samples not yet written, per endpoint. */
    pending = new Map();
    flushTimer;
    /**
     * Adds a sample. Samples are written in one pipeline every FLUSH_MS rather than one MULTI per call (that was
     * four Redis commands and a socket write per request): readers see them within FLUSH_MS + REFRESH_MS, and a
     * process that dies loses at most FLUSH_MS of samples (they only steer routing).
     */
    record(slug, sample) {
        if (sample.retryUntil !== undefined && sample.retryUntil > (this.retryUntil.get(slug) ?? 0))
            this.retryUntil.set(slug, sample.retryUntil);
        const samples = this.pending.get(slug);
        if (samples)
            samples.push((0, endpoint_stats_1.serializeSample)(sample));
        else
            this.pending.set(slug, [(0, endpoint_stats_1.serializeSample)(sample)]);
        if (!this.flushTimer) {
            this.flushTimer = setTimeout(() => void this.flush(), FLUSH_MS);
            this.flushTimer.unref();
        }
    }
    /** Writes the pending samples now (LPUSH newest first, then trim, per endpoint). */
    async flush() {
        clearTimeout(this.flushTimer);
        this.flushTimer = undefined;
        if (!this.pending.size)
            return;
        const pipe = this.redis.pipeline();
        for (const [slug, samples] of this.pending) {
            const key = `${this.prefix}:stats:${slug}`;
            pipe.lpush(key, ...samples).ltrim(key, 0, KEEP - 1);
        }
        this.pending = new Map();
        await pipe.exec().catch(() => undefined);
    }
    /** Last known statistics of these endpoints; refreshed in the background at most every 5 s. */
    snapshot(slugs, now = Date.now()) {
        if (now - this.cache.at > REFRESH_MS && !this.refreshing) {
            this.refreshing = this.refresh(slugs, now).finally(() => (this.refreshing = undefined));
        }
        return this.cache.stats;
    }
    async refresh(slugs, now = Date.now()) {
        const pipe = this.redis.pipeline();
        for (const s of slugs)
            pipe.lrange(`${this.prefix}:stats:${s}`, 0, KEEP - 1);
        const replies = (await pipe.exec()) ?? [];
        const stats = {};
        slugs.forEach((slug, i) => {
            const list = replies[i]?.[1] ?? [];
            const samples = list.map(endpoint_stats_1.parseSample).filter((s) => s !== null && s !== undefined);
            stats[slug] = (0, endpoint_stats_1.foldStats)(samples, now, WINDOW_MS);
        });
        this.cache = { at: now, stats };
        return stats;
    }
    /** Epoch ms before which the endpoint asked not to be called (its `Retry-After`), or 0 when it may be called. */
    retryAfterUntil(slug, now = Date.now()) {
        const until = Math.max(this.retryUntil.get(slug) ?? 0, (Object.hasOwn(this.cache.stats, slug) ? this.cache.stats[slug].retryAfterUntil : 0) ?? 0);
        if (until > now)
            return until;
        this.retryUntil.delete(slug);
        return 0;
    }
    sticky(key) {
        return this.redis.get(`${this.prefix}:sticky:${key}`).catch(() => null);
    }
    setSticky(key, slug) {
        this.redis.set(`${this.prefix}:sticky:${key}`, slug, 'EX', 3600).catch(() => undefined);
    }
}
exports.EndpointStatsStore = EndpointStatsStore;
