import Redis, { type RedisOptions } from 'ioredis';

/**
 * Redis connections. BullMQ workers need `maxRetriesPerRequest: null` (blocking commands); the API's own
 * connection fails fast instead, so a Redis outage turns into 503 rather than hanging requests.
 */
export function createRedis(url: string, opts: { forWorker?: boolean; name?: string } = {}): Redis {
  const options: RedisOptions = {
    connectionName: opts.name,
    maxRetriesPerRequest: opts.forWorker ? null : 1,
    enableOfflineQueue: opts.forWorker ? true : false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    lazyConnect: false,
  };
  return new Redis(url, options);
}
