"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.processCount = processCount;
const node_cluster_1 = __importDefault(require("node:cluster"));
const node_os_1 = __importDefault(require("node:os"));
const bootstrap_1 = require("../shared/runtime/bootstrap");
const main_1 = require("../api/main");
const main_2 = require("../workers/main");
const env_1 = require("../shared/config/env");
const logger_1 = require("../shared/logger");
const services_1 = require("../shared/runtime/services");
const secret_1 = require("../shared/runtime/secret");
/**
 * `npm start`: API and workers, with embedded PostgreSQL and Redis unless DATABASE_URL and REDIS_URL are set
 * (decisions.md section 1). `--demo` adds the fake providers and the demo catalog.
 *
 * It uses the machine's cores: `WEB_CONCURRENCY` processes (default: the core count), each serving the API and
 * the workers, share the port (node:cluster). The parent starts the embedded PostgreSQL and Redis once, applies
 * the migrations and settles the secret, then starts the processes on those URLs; it restarts one that dies and
 * stops them all on SIGTERM. `WEB_CONCURRENCY=1` (and demo mode) runs everything in this one process.
 * On SIGTERM the API stops taking requests and finishes those in flight, then the workers finish their jobs.
 */
const CHILD = 'SWITCHYARD_CLUSTER_CHILD';
/** How many processes `npm start` runs: WEB_CONCURRENCY, else the cores this process may use (1 in demo mode). */
function processCount(config) {
    return config.webConcurrency ?? (config.demo ? 1 : node_os_1.default.availableParallelism());
}
function startOne() {
    (0, bootstrap_1.bootstrap)('all')
        .then(async (rt) => {
        const pool = await (0, main_2.startWorkers)(rt);
        const web = await (0, main_1.startWeb)(rt);
        rt.onClose(() => pool.close());
        rt.onClose(() => web.close()); // runs first: stop taking requests before the workers stop
        (0, bootstrap_1.onShutdown)(rt.logger, () => rt.close(), rt.config.shutdownTimeoutMs);
        process.send?.('ready');
    })
        .catch((e) => {
        console.error(e.message);
        process.exit(1);
    });
}
async function startCluster(config, n) {
    const logger = (0, logger_1.createLogger)({ level: config.logLevel, service: 'switchyard-start' });
    const services = await (0, services_1.resolveServices)(config, logger);
    const env = { [CHILD]: '1', DATABASE_URL: services.databaseUrl, REDIS_URL: services.redisUrl, SWITCHYARD_SECRET: (0, secret_1.resolveSecret)(config) };
    // PostgreSQL takes 100 connections by default: the processes share 80 unless DATABASE_POOL_SIZE says otherwise.
    if (!config.databasePoolSizeSet)
        env.DATABASE_POOL_SIZE = String(Math.max(4, Math.min(20, Math.floor(80 / n))));
    let stopping = false;
    let ready = 0;
    const stopAll = async (code) => {
        if (stopping)
            return;
        stopping = true;
        const alive = Object.values(node_cluster_1.default.workers ?? {}).filter((w) => w && !w.isDead());
        await Promise.all(alive.map((w) => new Promise((done) => (w.once('exit', done), w.process.kill('SIGTERM')))));
        await services.stop();
        process.exit(code);
    };
    const fork = () => {
        const w = node_cluster_1.default.fork(env);
        let up = false;
        w.on('message', (m) => {
            if (m !== 'ready' || up)
                return;
            up = true;
            if (++ready === n)
                logger.info(`${n} processes serve the API and the workers`);
        });
        w.once('exit', (code, signal) => {
            if (stopping)
                return;
            // One that never came up (a refused catalog, a taken port) would fail again: stop with its error.
            if (!up)
                return void stopAll(1);
            logger.error(`process ${w.process.pid} exited (${signal ?? code}); starting another in 1 s`);
            setTimeout(() => stopping || fork(), 1000); // a process that keeps dying does not spin the machine
        });
    };
    for (let i = 0; i < n; i++)
        fork();
    for (const s of ['SIGTERM', 'SIGINT'])
        process.once(s, () => void stopAll(0));
}
function main() {
    const config = (0, env_1.loadConfig)(process.env, process.argv);
    const n = node_cluster_1.default.isPrimary && !config.clusterChild ? processCount(config) : 1;
    if (n <= 1)
        return startOne();
    startCluster(config, n).catch((e) => {
        console.error(e.message);
        process.exit(1);
    });
}
try {
    main();
}
catch (e) {
    console.error(e.message); // a bad setting: its message names the variable
    process.exit(1);
}
