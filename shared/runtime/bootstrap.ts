import { systemClock } from '../ids';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type Redis from 'ioredis';
import { loadConfig, type Config } from '../config/env';
import { connectDb, connectListings, type Db } from '../db/client';
import type { Pool } from 'pg';
import { CatalogError, loadCatalog, providersWithoutKey } from '../catalog/load-catalog';
import type { Catalog } from '../catalog/catalog.types';
import { createLogger, type Logger } from '../logger';
import { createRedis, warnWithoutAppendOnly, whenReady } from '../queue/redis';
import { createUpstreamClient, type UpstreamClient } from '../providers/api';
import { resolveServices, type Services } from './services';
import { resolveSecret } from './secret';
import { createMetrics, type Metrics } from '../metrics/metrics';
import { clusterScrape } from '../metrics/cluster-metrics';
import { Ledger } from '../billing/ledger';
import { LocalLane } from './local-lane';
import { startTracing, type Tracing } from '../telemetry/tracing';
import { DEMO_DEFAULT_URL, demoProvidersUrl, startDemoProviders } from './demo-providers';

export type Role = 'all' | 'web' | 'worker';

/** Everything a Switchyard process holds; `close()` releases it in order. */
export interface Runtime {
  config: Config;
  logger: Logger;
  services: Services;
  catalog: Catalog;
  secret: string;
  db: Db;
  /** The pg pool under `db` (the ledger's hot path). */
  pool: Pool;
  /** DATABASE_READ_URL's replica, when set: history's and activity's reads (shared/db/read-routing.ts). */
  readDb?: Db;
  /** History's listings' pools (shared/db/client.ts connectListings), on the primary and on DATABASE_READ_URL's replica. */
  historyPools: { primary: Pool; replica?: Pool };
  /** Fail-fast connection (API requests, publishing). */
  redis: Redis;
  /** Patient connections: subscriber and BullMQ workers. */
  patient(name: string): Redis;
  upstream: UpstreamClient;
  /** One Prometheus registry per process: the API's /metrics shows the workers' series in a single-process start. */
  metrics: Metrics;
  /**
   * One ledger per process: in a process that serves the API and the workers (`npm start`) the reservations of new
   * requests and the settlements of finished ones share its batches, so one commit and one row lock serve both.
   */
  ledger: Ledger;
  /** What the process's API and workers share in memory (shared/runtime/local-lane.ts): one per process. */
  lane: LocalLane;
  /** OpenTelemetry spans of this process (shared/telemetry), when OTEL_EXPORTER_OTLP_ENDPOINT is set; flushed at close. */
  tracing?: Tracing;
  onClose(fn: () => Promise<unknown> | unknown): void;
  close(): Promise<void>;
}

/**
 * Starts what a process needs before it serves: configuration, embedded or external PostgreSQL and Redis
 * (migrated), the catalog (refused with every problem named), the secret, and connections. In demo mode the
 * fake providers start too (a process of npm start's cluster uses its parent's) and the demo catalog points at them.
 */
export async function bootstrap(role: Role, config: Config = loadConfig()): Promise<Runtime> {
  const logger = createLogger({ level: config.logLevel, service: `switchyard-${role}` });
  const closers: Array<() => Promise<unknown> | unknown> = [];
  let demoUrl: string | undefined;

  if (config.demo && config.clusterChild) {
    // npm start's parent runs the one set of fake providers of its processes (bin/start.ts).
    demoUrl = demoProvidersUrl(config);
  } else if (config.demo) {
    const fake = await startDemoProviders(config, logger);
    closers.push(() => fake.close());
    demoUrl = fake.url;
  }

  let catalog: Catalog;
  try {
    catalog = loadCatalog(config.catalogPath, config.providerKeys);
  } catch (e) {
    if (e instanceof CatalogError) throw new Error(`catalog ${config.catalogPath} refused:\n- ${e.problems.join('\n- ')}`);
    throw e;
  }
  // The demo catalog names the fake's default address; follow it when DEMO_PROVIDER_PORT moved it (a new
  // catalog: the loaded one is never changed in place).
  if (demoUrl) catalog = withBaseUrl(catalog, DEMO_DEFAULT_URL, demoUrl);
  const missing = providersWithoutKey(catalog);
  if (missing.length) logger.warn(`providers without an API key (their endpoints are skipped): ${missing.join(', ')}`);

  // A process `npm start` forked (bin/start.ts) leaves runtime.json to its parent, which owns the services.
  const writeRuntimeFile = !config.clusterChild && (role !== 'worker' || !config.databaseUrl);
  const services = await resolveServices(config, logger, { writeRuntimeFile });
  const secret = resolveSecret(config);
  const { db, pool } = connectDb(services.databaseUrl, { max: config.databasePoolSize });
  const readDb = config.databaseReadUrl ? connectDb(config.databaseReadUrl, { max: config.databasePoolSize, timeoutMs: config.readReplicaTimeoutMs }).db : undefined;
  // A listing holds up to three connections at once (count, page, estimate): a quarter of DATABASE_POOL_SIZE, at least 3.
  const historyMax = Math.max(3, Math.ceil(config.databasePoolSize / 4));
  const historyPools = {
    primary: connectListings(services.databaseUrl, { max: historyMax }),
    ...(config.databaseReadUrl && { replica: connectListings(config.databaseReadUrl, { max: historyMax, timeoutMs: config.readReplicaTimeoutMs }) }),
  };
  const redis = createRedis(services.redisUrl, { name: `switchyard-${role}` });
  const patients: Redis[] = [];
  await whenReady(redis);
  await warnWithoutAppendOnly(redis, logger);
  const upstream = createUpstreamClient();
  // A process `npm start` forked answers /metrics for the whole machine (shared/metrics/cluster-metrics.ts).
  const metrics = createMetrics({ processMetrics: true, scrape: config.clusterChild ? clusterScrape : undefined });
  const tracing = startTracing(config.tracing);
  if (tracing) logger.info(`tracing: spans exported over OTLP/HTTP to ${config.tracing!.endpoint}/v1/traces`);

  let closing: Promise<void> | undefined;
  return {
    config,
    logger,
    services,
    catalog,
    secret,
    db,
    pool,
    readDb,
    historyPools,
    redis,
    patient(name) {
      const r = createRedis(services.redisUrl, { name: `switchyard-${role}-${name}`, patient: true });
      patients.push(r);
      return r;
    },
    upstream,
    metrics,
    ledger: new Ledger(db, systemClock, { pool, metrics }),
    lane: new LocalLane(),
    tracing,
    onClose: (fn) => closers.unshift(fn),
    close() {
      closing ??= (async () => {
        for (const fn of closers) await Promise.resolve(fn()).catch((e) => logger.error('shutdown step failed', { err: e }));
        await tracing?.shutdown().catch(() => undefined);
        await upstream.close().catch(() => undefined);
        await db.$disconnect().catch(() => undefined);
        await readDb?.$disconnect().catch(() => undefined);
        for (const p of [historyPools.primary, historyPools.replica]) await p?.end().catch(() => undefined);
        for (const r of [redis, ...patients]) r.disconnect();
        await services.stop();
      })();
      return closing;
    },
  };
}

/** Listens (with `options`: api/app.ts serverOptionsFor), and on close stops taking connections and lets in-flight requests finish. */
export function listen(app: http.RequestListener, port: number, options: http.ServerOptions = {}): Promise<{ server: http.Server; port: number; close(): Promise<void> }> {
  const server = http.createServer({ keepAliveTimeout: 65_000, ...options }, app);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => {
      const bound = (server.address() as AddressInfo).port;
      resolve({
        server,
        port: bound,
        close: () =>
          new Promise<void>((done) => {
            // Requests in flight finish; their keep-alive connections are closed as soon as they turn idle, not
            // after keepAliveTimeout (server.close() alone would wait for them, and shutdown would time out).
            const sweep = setInterval(() => server.closeIdleConnections(), 100);
            server.close(() => {
              clearInterval(sweep);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}

/** The catalog with `from` replaced by `to` at the start of every provider's base URL. */
function withBaseUrl(catalog: Catalog, from: string, to: string): Catalog {
  const providers: Catalog['providers'] = Object.create(null);
  for (const [id, p] of Object.entries(catalog.providers)) providers[id] = { ...p, baseUrl: p.baseUrl.replace(from, to) };
  return { ...catalog, providers };
}

/** SIGTERM / SIGINT → one graceful shutdown, then exit (forced after `timeoutMs`: Config.shutdownTimeoutMs). */
export function onShutdown(logger: Logger, stop: () => Promise<void>, timeoutMs = 30_000): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: shutting down gracefully`);
    const force = setTimeout(() => process.exit(1), timeoutMs);
    force.unref();
    stop().then(
      () => process.exit(0),
      (e) => {
        logger.error('shutdown failed', { err: e });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => handler('SIGTERM'));
  process.once('SIGINT', () => handler('SIGINT'));
}
