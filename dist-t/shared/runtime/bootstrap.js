"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.bootstrap = bootstrap;
exports.listen = listen;
exports.onShutdown = onShutdown;
const node_http_1 = __importDefault(require("node:http"));
const env_1 = require("../config/env");
const client_1 = require("../db/client");
const load_catalog_1 = require("../catalog/load-catalog");
const logger_1 = require("../logger");
const redis_1 = require("../queue/redis");
const api_1 = require("../providers/api");
const services_1 = require("./services");
const secret_1 = require("./secret");
const metrics_1 = require("../metrics/metrics");
/** Where config/catalog.demo.json expects the fake providers. */
const DEMO_DEFAULT_URL = 'http://127.0.0.1:4010';
/**
 * Starts what a process needs before it serves: configuration, embedded or external PostgreSQL and Redis
 * (migrated), the catalog (refused with every problem named), the secret, and connections. In demo mode the
 * fake providers start too and the demo catalog points at them.
 */
async function bootstrap(role, config = (0, env_1.loadConfig)()) {
    const logger = (0, logger_1.createLogger)({ level: config.logLevel, service: `switchyard-${role}` });
    const closers = [];
    let demoUrl;
    if (config.demo) {
        // The fake providers live with the tests; the build compiles them into dist/test/fakes.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { startFakeProvider } = require('../../test/fakes/fake-provider');
        const fake = await startFakeProvider({ port: config.demoProviderPort, knobs: { latencyMs: 50, chunkDelayMs: 30 } });
        closers.push(() => fake.close());
        demoUrl = fake.url;
        logger.info(`demo mode: fake providers on ${fake.url}; catalog ${config.catalogPath}`);
    }
    let catalog;
    try {
        catalog = (0, load_catalog_1.loadCatalog)(config.catalogPath, config.providerKeys);
    }
    catch (e) {
        if (e instanceof load_catalog_1.CatalogError)
            throw new Error(`catalog ${config.catalogPath} refused:\n- ${e.problems.join('\n- ')}`);
        throw e;
    }
    // The demo catalog names the fake's default address; follow it when DEMO_PROVIDER_PORT moved it (a new
    // catalog: the loaded one is never changed in place).
    if (demoUrl)
        catalog = withBaseUrl(catalog, DEMO_DEFAULT_URL, demoUrl);
    const missing = (0, load_catalog_1.providersWithoutKey)(catalog);
    if (missing.length)
        logger.warn(`providers without an API key (their endpoints are skipped): ${missing.join(', ')}`);
    // A process `npm start` forked (bin/start.ts) leaves runtime.json to its parent, which owns the services.
    const writeRuntimeFile = !config.clusterChild && (role !== 'worker' || !config.databaseUrl);
    const services = await (0, services_1.resolveServices)(config, logger, { writeRuntimeFile });
    const secret = (0, secret_1.resolveSecret)(config);
    const { db, pool } = (0, client_1.connectDb)(services.databaseUrl, { max: config.databasePoolSize });
    const redis = (0, redis_1.createRedis)(services.redisUrl, { name: `switchyard-${role}` });
    const patients = [];
    await (0, redis_1.whenReady)(redis);
    const upstream = (0, api_1.createUpstreamClient)();
    let closing;
    return {
        config,
        logger,
        services,
        catalog,
        secret,
        db,
        pool,
        redis,
        patient(name) {
            const r = (0, redis_1.createRedis)(services.redisUrl, { name: `switchyard-${role}-${name}`, patient: true });
            patients.push(r);
            return r;
        },
        upstream,
        metrics: (0, metrics_1.createMetrics)({ processMetrics: true }),
        onClose: (fn) => closers.unshift(fn),
        close() {
            closing ??= (async () => {
                for (const fn of closers)
                    await Promise.resolve(fn()).catch((e) => logger.error('shutdown step failed', { err: e }));
                await upstream.close().catch(() => undefined);
                await db.$disconnect().catch(() => undefined);
                for (const r of [redis, ...patients])
                    r.disconnect();
                await services.stop();
            })();
            return closing;
        },
    };
}
/** Listens, and on close stops taking connections and lets in-flight requests finish. */
function listen(app, port) {
    const server = node_http_1.default.createServer({ keepAliveTimeout: 65_000 }, app);
    return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, () => {
            const bound = server.address().port;
            resolve({
                server,
                port: bound,
                close: () => new Promise((done) => {
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
function withBaseUrl(catalog, from, to) {
    const providers = Object.create(null);
    for (const [id, p] of Object.entries(catalog.providers))
        providers[id] = { ...p, baseUrl: p.baseUrl.replace(from, to) };
    return { ...catalog, providers };
}
/** SIGTERM / SIGINT → one graceful shutdown, then exit (forced after `timeoutMs`: Config.shutdownTimeoutMs). */
function onShutdown(logger, stop, timeoutMs = 30_000) {
    let stopping = false;
    const handler = (signal) => {
        if (stopping)
            return;
        stopping = true;
        logger.info(`${signal}: shutting down gracefully`);
        const force = setTimeout(() => process.exit(1), timeoutMs);
        force.unref();
        stop().then(() => process.exit(0), (e) => {
            logger.error('shutdown failed', { err: e });
            process.exit(1);
        });
    };
    process.once('SIGTERM', () => handler('SIGTERM'));
    process.once('SIGINT', () => handler('SIGINT'));
}
