"use strict";
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __setModuleDefault = (this && this.__setModuleDefault) || (Object.create ? (function(o, v) {
    Object.defineProperty(o, "default", { enumerable: true, value: v });
}) : function(o, v) {
    o["default"] = v;
});
var __importStar = (this && this.__importStar) || (function () {
    var ownKeys = function(o) {
        ownKeys = Object.getOwnPropertyNames || function (o) {
            var ar = [];
            for (var k in o) if (Object.prototype.hasOwnProperty.call(o, k)) ar[ar.length] = k;
            return ar;
        };
        return ownKeys(o);
    };
    return function (mod) {
        if (mod && mod.__esModule) return mod;
        var result = {};
        if (mod != null) for (var k = ownKeys(mod), i = 0; i < k.length; i++) if (k[i] !== "default") __createBinding(result, mod, k[i]);
        __setModuleDefault(result, mod);
        return result;
    };
})();
Object.defineProperty(exports, "__esModule", { value: true });
exports.createRedis = createRedis;
exports.coalesceWrites = coalesceWrites;
exports.isClusterUrl = isClusterUrl;
exports.parseClusterUrl = parseClusterUrl;
exports.whenReady = whenReady;
exports.deleteKeys = deleteKeys;
const ioredis_1 = __importStar(require("ioredis"));
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
function createRedis(url, opts = {}) {
    const options = {
        connectionName: opts.name,
        maxRetriesPerRequest: opts.patient ? null : 1,
        enableOfflineQueue: opts.patient ? true : false,
        retryStrategy: (times) => Math.min(times * 200, 2000),
        lazyConnect: false,
    };
    const cluster = parseClusterUrl(url);
    if (!cluster)
        return coalesceWrites(new ioredis_1.default(url, options));
    const { nodes, redisOptions } = cluster;
    const clusterOptions = {
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
    return new ioredis_1.Cluster(nodes, clusterOptions);
}
/**
 * Commands issued in one tick leave in one socket write. ioredis writes every command on its own (`noDelay`): a
 * batch of generations finishing together sent one EVALSHA write each, and on loopback each write costs the
 * sender the receiver's TCP work too (socket writes to Redis were a sixth of the process's CPU under load). Corking
 * the socket until the tick ends sends the same bytes in the same order, in one `writev`: unlike ioredis's
 * auto-pipelining, no command changes how it is sent or how its reply and errors come back.
 */
function coalesceWrites(redis) {
    redis.on('connect', () => {
        const stream = redis.stream;
        if (!stream || PATCHED.has(stream))
            return;
        PATCHED.add(stream);
        const write = stream.write;
        let corked = false;
        const uncork = () => {
            corked = false;
            stream.uncork();
        };
        stream.write = function (...args) {
            if (!corked) {
                corked = true;
                stream.cork();
                process.nextTick(uncork);
            }
            return write.apply(this, args);
        };
    });
    return redis;
}
const PATCHED = new WeakSet();
/** True when this URL names a Redis Cluster (`redis+cluster://` / `rediss+cluster://`). */
function isClusterUrl(url) {
    return /^rediss?\+cluster:\/\//i.test(url);
}
/** The seed nodes and shared node options of a `redis+cluster://` URL; null for a single-server URL. */
function parseClusterUrl(url) {
    const m = /^(rediss?)\+cluster:\/\/(.*)$/i.exec(url);
    if (!m)
        return null;
    const tls = m[1].toLowerCase() === 'rediss';
    let rest = m[2].replace(/\/.*$/, '').replace(/\?.*$/, '');
    let username;
    let password;
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
        if (!host || !Number.isInteger(port) || port <= 0 || port > 65535)
            throw new Error(`REDIS_URL: bad cluster node "${hp}"`);
        return { host, port };
    });
    if (nodes.length === 0)
        throw new Error('REDIS_URL: a redis+cluster:// URL names at least one node');
    const redisOptions = { ...(username && { username }), ...(password && { password }), ...(tls && { tls: {} }) };
    return { nodes, redisOptions };
}
/** Resolves once the connection is ready (a fail-fast connection refuses commands before that). */
function whenReady(redis, timeoutMs = 10_000) {
    if (redis.status === 'ready')
        return Promise.resolve();
    return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('Redis did not become ready in time')), timeoutMs);
        redis.once('ready', () => {
            clearTimeout(timer);
            resolve();
        });
    });
}
/**
 * Deletes the keys matching a pattern on every master (KEYS on a cluster connection reaches one node only).
 * For clean-up and tests; never on a hot path.
 */
async function deleteKeys(redis, pattern) {
    const nodes = redis instanceof ioredis_1.Cluster ? redis.nodes('master') : [redis];
    let n = 0;
    for (const node of nodes) {
        const keys = await node.keys(pattern);
        if (!keys.length)
            continue;
        // One DEL per key: keys of different slots may share a node, and a multi-key DEL across slots is refused.
        const pipe = node.pipeline();
        for (const k of keys)
            pipe.del(k);
        for (const [err, count] of (await pipe.exec()) ?? [])
            if (!err)
                n += Number(count);
    }
    return n;
}
