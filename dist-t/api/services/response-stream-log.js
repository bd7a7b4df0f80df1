"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ResponseStreamLog = exports.TERMINAL_EVENTS = void 0;
/** Events that end a Responses stream. */
exports.TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);
/**
 * The Server-Sent Events of a background streamed response, kept in Redis (a list, index = sequence_number) so a
 * client can resume with GET /v1/responses/{id}?stream=true&starting_after=N from any API process. Kept for
 * `ttlSeconds` after the last event.
 */
class ResponseStreamLog {
    redis;
    prefix;
    ttlSeconds;
    constructor(redis, prefix, ttlSeconds = 3600) {
        this.redis = redis;
        this.prefix = prefix;
        this.ttlSeconds = ttlSeconds;
    }
    key(id) {
        return `${this.prefix}:responses:sse:${id}`;
    }
    async append(id, events) {
        if (events.length === 0)
            return;
        const key = this.key(id);
        await this.redis.multi().rpush(key, ...events.map((e) => JSON.stringify(e))).expire(key, this.ttlSeconds).exec();
    }
    /** Events from sequence number `from` on. */
    async read(id, from) {
        return (await this.redis.lrange(this.key(id), Math.max(0, from), -1)).map((e) => JSON.parse(e));
    }
    async forget(id) {
        await this.redis.del(this.key(id));
    }
}
exports.ResponseStreamLog = ResponseStreamLog;
