import { createHash } from 'node:crypto';
import type Redis from 'ioredis';

/** Sign-in throttling (decisions.md section 8): failures per e-mail and per client address, in a fixed window. */
export const LOGIN_LIMITS = { perEmail: 5, perAddress: 50, windowMs: 15 * 60_000 } as const;

// Refuses (answering the milliseconds left of the full window) when either counter is at its limit; otherwise counts
// this attempt as a failure in both before the password is checked, so that attempts sent at once cannot all pass the
// check before any failure is counted. A right password takes its attempt back (LoginThrottle.succeeded).
const SCRIPT = `
local limits = { tonumber(ARGV[1]), tonumber(ARGV[2]) }
for i = 1, 2 do
  local n = tonumber(redis.call('GET', KEYS[i]) or '0')
  if n >= limits[i] then
    local left = redis.call('PTTL', KEYS[i])
    if left < 0 then left = tonumber(ARGV[3]) end
    return left
  end
end
for i = 1, 2 do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
end
return 0`;

type ThrottleRedis = Redis & { syLoginAttempt(emailKey: string, addressKey: string, perEmail: string, perAddress: string, windowMs: string): Promise<number> };

/**
 * Kept in Redis (every API process sees the same counts). Keys carry the queue prefix, whose hash tag puts both on one
 * Redis Cluster slot; the e-mail is hashed so that no address sits in Redis in clear.
 */
export class LoginThrottle {
  private readonly redis: ThrottleRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly limits: { perEmail: number; perAddress: number; windowMs: number } = LOGIN_LIMITS,
  ) {
    if (!('syLoginAttempt' in redis)) redis.defineCommand('syLoginAttempt', { numberOfKeys: 2, lua: SCRIPT });
    this.redis = redis as ThrottleRedis;
  }

  private keys(email: string, address: string): [string, string] {
    const e = createHash('sha256').update(email).digest('base64url');
    return [`${this.prefix}:login:email:${e}`, `${this.prefix}:login:addr:${address}`];
  }

  /** 0 when the attempt may go on (it is counted as a failure until `succeeded`), else the milliseconds to wait. */
  async attempt(email: string, address: string): Promise<number> {
    const [e, a] = this.keys(email, address);
    const { perEmail, perAddress, windowMs } = this.limits;
    return Number(await this.redis.syLoginAttempt(e, a, String(perEmail), String(perAddress), String(windowMs)));
  }

  /** The password was right: the attempt was no failure. */
  async succeeded(email: string, address: string): Promise<void> {
    const [e, a] = this.keys(email, address);
    await this.redis.multi().del(e).decr(a).exec();
  }
}
