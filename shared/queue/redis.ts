import Redis, { type RedisOptions } from 'ioredis';

/**
 * Redis connections. BullMQ workers and subscribers need `maxRetriesPerRequest: null` and an offline queue
 * (`patient`); the API's own connection fails fast instead, so a Redis outage turns into 503 rather than
 * hanging requests.
 */
export function createRedis(url: string, opts: { patient?: boolean; name?: string } = {}): Redis {
  const options: RedisOptions = {
    connectionName: opts.name,
    maxRetriesPerRequest: opts.patient ? null : 1,
    enableOfflineQueue: opts.patient ? true : false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    lazyConnect: false,
  };
  return new Redis(url, options);
}

/** Resolves once the connection is ready (a fail-fast connection refuses commands before that). */
export function whenReady(redis: Redis, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Redis did not become ready in time')), timeoutMs);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
