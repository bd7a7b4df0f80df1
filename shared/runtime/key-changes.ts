import type Redis from 'ioredis';
import { createRedis, listenForJson, whenReady } from '../queue/redis';

/**
 * A key changed (revoked, disabled or enabled, its limit, models or rate limit): every API process of the deployment is
 * told over one pub/sub channel, so none keeps serving it from its key cache (api/middleware/auth.ts) or, when its terms
 * changed (`terms`: limit, period, disabled, revoked), from a reservation lease taken under the old terms
 * (shared/billing/leases.ts `revokeKey`). The process that made the change applies it before it answers; the others as
 * the message arrives, within milliseconds. A message that never arrives (Redis away, a subscriber moving between
 * cluster nodes) leaves the bounds that hold without it: the key cache's 1 s, a lease's next renewal.
 */
export interface KeyChange {
  keyId: string;
  terms: boolean;
}

export function keyChangesChannel(prefix: string): string {
  return `${prefix}:key-changes`;
}

/** Tells the other processes; never throws (the bounds above hold without it). */
export async function announceKeyChange(redis: Redis, prefix: string, change: KeyChange): Promise<void> {
  await redis.publish(keyChangesChannel(prefix), JSON.stringify(change)).catch(() => undefined);
}

/**
 * Tells a deployment's processes from outside it (the CLI): one short-lived connection to `url`, the message, gone.
 * False when Redis did not answer within `timeoutMs`: the processes then learn within the bounds above.
 */
export async function announceKeyChangeFrom(url: string, prefix: string, change: KeyChange, timeoutMs = 2_000): Promise<boolean> {
  const redis = createRedis(url, { name: 'switchyard-cli' });
  redis.on('error', () => undefined);
  try {
    await whenReady(redis, timeoutMs);
    await redis.publish(keyChangesChannel(prefix), JSON.stringify(change));
    return true;
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/**
 * Subscribes `sub` (the API's subscriber connection, shared with its reply channel: each listener reads only its own
 * channel's messages) and calls `apply` for every well-formed change. Resolves once subscribed.
 */
export function listenForKeyChanges(sub: Redis, prefix: string, apply: (change: KeyChange) => void): Promise<void> {
  return listenForJson(sub, keyChangesChannel(prefix), (m) => {
    if (typeof m.keyId === 'string' && typeof m.terms === 'boolean') apply({ keyId: m.keyId, terms: m.terms });
  });
}
