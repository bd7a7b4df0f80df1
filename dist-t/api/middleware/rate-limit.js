"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.rateLimitMiddleware = rateLimitMiddleware;
const app_error_1 = require("../../shared/errors/app-error");
// INCR the window counter and, on its first request, let it expire when its window has ended (ARGV[1] ms from now).
const SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;
/**
 * Per-key (or per-user for tokens) fixed one-minute window kept in Redis, so it holds across every API
 * process. Limit: the key's own, else the organization's, else the default (600/min); 0 means none.
 */
function rateLimitMiddleware(redis, prefix, defaultPerMinute, clock = () => new Date()) {
    // EVALSHA of a script Redis keeps, instead of sending its text on every request.
    if (!('syRateLimit' in redis))
        redis.defineCommand('syRateLimit', { numberOfKeys: 1, lua: SCRIPT });
    const hit = redis.syRateLimit.bind(redis);
    return async (_req, res, next) => {
        const p = res.locals.principal;
        const limit = p.rateLimitPerMinute ?? defaultPerMinute;
        if (limit <= 0)
            return next();
        const subject = p.kind === 'key' ? p.keyId : p.userId;
        const windowMs = 60_000;
        const now = clock().getTime();
        const window = Math.floor(now / windowMs);
        // The window is minute-aligned: a request passes again when the next minute starts, not 60 s after this
        // window's first request (the key is per window, so its expiry only cleans up).
        const untilNext = (window + 1) * windowMs - now;
        try {
            const count = await hit(`${prefix}:rl:${subject}:${window}`, String(untilNext + 1000));
            res.setHeader('X-RateLimit-Limit', String(limit));
            res.setHeader('X-RateLimit-Remaining', String(Math.max(0, limit - count)));
            if (count > limit) {
                const retryAfter = String(Math.max(1, Math.ceil(untilNext / 1000)));
                return next(new app_error_1.AppError('TOO_MANY_REQUESTS', `Rate limit of ${limit} requests a minute exceeded: repeat later`, { headers: { 'Retry-After': retryAfter } }));
            }
            next();
        }
        catch (e) {
            next(e);
        }
    };
}
