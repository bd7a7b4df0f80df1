import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';

/**
 * Redis connections. BullMQ workers and subscribers need `maxRetriesPerRequest: null` and an offline queue
 * (`patient`); the API's own connection fails fast instead, so a Redis outage turns into 503 rather than
 * hanging requests.
 *
 * REDIS_URL names one server (`redis://…`, `rediss://…`) or a Redis Cluster: `redis+cluster://` (or
 * `rediss+cluster://` for TLS) followed by one or more comma-separated seed nodes, e.g.
 * `redis+cluster://:password@10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000`. Credentials written once apply to every
 * node. On a cluster the connection is an ioredis Cluster typed as Redis: every key the service uses starts with
 * the hash-tagged QUEUE_PREFIX (`{switchyard}`), so multi-key scripts, MULTI and pipelines stay on one slot.
 */
export function createRedis(url: string, opts: { patient?: boolean; name?: string } = {}): Redis {
  const options: RedisOptions = {
    connectionName: opts.name,
    maxRetriesPerRequest: opts.patient ? null : 1,
    enableOfflineQueue: opts.patient ? true : false,
    retryStrategy: (times) => Math.min(times * 200, 2000),
    lazyConnect: false,
  };
  const cluster = parseClusterUrl(url);
  if (!cluster) return coalesceWrites(new Redis(url, options));
  const { nodes, redisOptions } = cluster;
  const clusterOptions: ClusterOptions = {
    redisOptions: { ...redisOptions, connectionName: opts.name, maxRetriesPerRequest: options.maxRetriesPerRequest },
    // A fail-fast connection still waits out a failover (MOVED / CLUSTERDOWN retries) but queues nothing
    // while the whole cluster is unreachable.
    enableOfflineQueue: opts.patient ? true : false,
    clusterRetryStrategy: (times) => Math.min(times * 200, 2000),
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 100,
    // Refresh the slot map soon after a node goes away, so requests reach the promoted replica.
    slotsRefreshTimeout: 2000,
    slotsRefreshInterval: 5000,
    lazyConnect: false,
  };
  return new Cluster(nodes, clusterOptions) as unknown as Redis;
}

/**
 * Commands issued in one tick leave in one socket write. ioredis writes every command on its own (`noDelay`): a
 * batch of generations finishing together sent one EVALSHA write each, and on loopback each write costs the
 * sender the receiver's TCP work too (socket writes to Redis were a sixth of the process's CPU under load). Corking
 * the socket until the tick ends sends the same bytes in the same order, in one `writev`: unlike ioredis's
 * auto-pipelining, no command changes how it is sent or how its reply and errors come back.
 */
export function coalesceWrites(redis: Redis): Redis {
  // Each connect is a new socket (a reconnect opens another); the one patched last is this connection's to know.
  let patched: object | undefined;
  redis.on('connect', () => {
    const stream = (redis as unknown as { stream?: import('node:net').Socket }).stream;
    if (!stream || stream === patched) return;
    patched = stream;
    const write = stream.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      stream.uncork();
    };
    stream.write = function (this: typeof stream, ...args: Parameters<typeof write>) {
      if (!corked) {
        corked = true;
        stream.cork();
        process.nextTick(uncork);
      }
      return write.apply(this, args);
    } as typeof write;
  });
  return redis;
}

/** True when this URL names a Redis Cluster (`redis+cluster://` / `rediss+cluster://`). */
export function isClusterUrl(url: string): boolean {
  return /^rediss?\+cluster:\/\//i.test(url);
}

/** The seed nodes and shared node options of a `redis+cluster://` URL; null for a single-server URL. */
export function parseClusterUrl(url: string): { nodes: Array<{ host: string; port: number }>; redisOptions: RedisOptions } | null {
  const m = /^(rediss?)\+cluster:\/\/(.*)$/i.exec(url);
  if (!m) return null;
  const tls = m[1]!.toLowerCase() === 'rediss';
  let rest = m[2]!.replace(/\/.*$/, '').replace(/\?.*$/, '');
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const cred = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = cred.indexOf(':');
    username = decodeURIComponent(colon >= 0 ? cred.slice(0, colon) : '') || undefined;
    password = colon >= 0 ? decodeURIComponent(cred.slice(colon + 1)) : decodeURIComponent(cred);
  }
  const nodes = rest
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((hp) => {
      const i = hp.lastIndexOf(':');
      const host = (i >= 0 ? hp.slice(0, i) : hp).replace(/^\[|\]$/g, '');
      const port = i >= 0 ? Number(hp.slice(i + 1)) : 6379;
      if (!host || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`REDIS_URL: bad cluster node "${hp}"`);
      return { host, port };
    });
  if (nodes.length === 0) throw new Error('REDIS_URL: a redis+cluster:// URL names at least one node');
  const redisOptions: RedisOptions = { ...(username && { username }), ...(password && { password }), ...(tls && { tls: {} }) };
  return { nodes, redisOptions };
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

/**
 * Subscribes `sub` (a connection in subscriber mode from now on; it may carry other channels) to `channel` and calls
 * `on` with every message of that channel that parses as a JSON object (a message that does not is dropped; `on`
 * checks the fields). Resolves once subscribed.
 */
export async function listenForJson(sub: Redis, channel: string, on: (message: Record<string, unknown>) => void): Promise<void> {
  sub.on('message', (from: string, text: string) => {
    if (from !== channel) return;
    let m: unknown;
    try {
      m = JSON.parse(text);
    } catch {
      return;
    }
    if (m !== null && typeof m === 'object' && !Array.isArray(m)) on(m as Record<string, unknown>);
  });
  await sub.subscribe(channel);
}

/**
 * Warns (one log line) when the Redis behind `redis` keeps no append-only file: the queues, the settlement journal
 * (replies promised before their commit) and the reservation outcomes live there, and a restart would lose them
 * (README.md "Redis in production"). Silent when CONFIG is not permitted (managed Redis) or answers otherwise.
 * Resolves to whether it warned.
 */
export async function warnWithoutAppendOnly(redis: Redis, logger: { warn(message: string): unknown }): Promise<boolean> {
  const reply = (await redis.config('GET', 'appendonly').catch(() => null)) as unknown;
  if (!Array.isArray(reply) || reply[1] !== 'no') return false;
  logger.warn('Redis runs without an append-only file (appendonly no): a restart loses the queued jobs and the settlements promised before their commit; set `appendonly yes` (README.md "Redis in production")');
  return true;
}

/** The nodes a keyspace command must visit: every master of a cluster connection (it reaches one node only), else the one. */
function masters(redis: Redis): Redis[] {
  return (redis as unknown) instanceof Cluster ? (redis as unknown as Cluster).nodes('master') : [redis];
}

/** The keys matching a pattern, SCANned on every master. */
export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  for (const node of masters(redis)) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
  }
  return keys;
}

/**
 * Deletes the keys matching a pattern on every master (KEYS on a cluster connection reaches one node only).
 * For clean-up and tests; never on a hot path.
 */
export async function deleteKeys(redis: Redis, pattern: string): Promise<number> {
  let n = 0;
  for (const node of masters(redis)) {
    const keys = await node.keys(pattern);
    if (!keys.length) continue;
    // One DEL per key: keys of different slots may share a node, and a multi-key DEL across slots is refused.
    const pipe = node.pipeline();
    for (const k of keys) pipe.del(k);
    for (const [err, count] of (await pipe.exec()) ?? []) if (!err) n += Number(count);
  }
  return n;
}
