import type { NextFunction, Request, Response } from 'express';
import type Redis from 'ioredis';
import { AppError } from '../../shared/errors/app-error';

// INCR the window counter and set its expiry in one atomic step; returns [count, ms left in the window].
const SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`;

/**
 * Per-key (or per-user for tokens) fixed one-minute window kept in Redis, so it holds across every API
 * process. Limit: the key's own, else the organization's, else the default (600/min); 0 means none.
 */
export function rateLimitMiddleware(redis: Redis, prefix: string, defaultPerMinute: number) {
  // EVALSHA of a script Redis keeps, instead of sending its text on every request.
  if (!('syRateLimit' in redis)) redis.defineCommand('syRateLimit', { numberOfKeys: 1, lua: SCRIPT });
  const hit = (redis as unknown as { syRateLimit(key: string, windowMs: string): Promise<[number, number]> }).syRateLimit.bind(redis);
  return async (_req: Request, res: Response, next: NextFunction): Promise<void> => {
    const p = res.locals.principal;
    const limit = p.rateLimitPerMinute ?? defaultPerMinute;
    if (limit <= 0) return next();
    const subject = p.kind === 'key' ? p.keyId : p.userId;
    const windowMs = 60_000;
    const window = Math.floor(Date.now() / windowMs);
    try {
      const [count, ttl] = await hit(`${prefix}:rl:${subject}:${window}`, String(windowMs));
      res.setHeader('X-RateLimit-Limit', String(limit));
      res.setHeader('X-RateLimit-Remaining', String(Math.max(0, limit - count)));
      if (count > limit) {
        const retryAfter = String(Math.max(1, Math.ceil((ttl > 0 ? ttl : windowMs) / 1000)));
        return next(new AppError('TOO_MANY_REQUESTS', `Rate limit of ${limit} requests a minute exceeded: repeat later`, { headers: { 'Retry-After': retryAfter } }));
      }
      next();
    } catch (e) {
      next(e);
    }
  };
}
