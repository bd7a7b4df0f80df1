"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.safeUrl = safeUrl;
exports.openDatabase = openDatabase;
exports.describeError = describeError;
const node_path_1 = __importDefault(require("node:path"));
const client_1 = require("../db/client");
const migrate_1 = require("../db/migrate");
const embedded_postgres_1 = require("../runtime/embedded-postgres");
const runtime_file_1 = require("../runtime/runtime-file");
/** A database URL with its password masked, for messages. */
function safeUrl(url) {
    try {
        const u = new URL(url);
        if (u.password)
            u.password = '***';
        return u.toString();
    }
    catch {
        return '(invalid URL)';
    }
}
/**
 * The database the CLI works on, migrated to the current schema:
 * 1. DATABASE_URL;
 * 2. else the external database a running service uses (its `<homeDir>/runtime.json`, when that service was
 *    started with its own DATABASE_URL);
 * 3. else the embedded PostgreSQL in `<homeDir>/pg`: the running server (the service's) is reused, found
 *    through its `postmaster.pid`; if none runs, the CLI starts it and stops it again in close(), unless a
 *    service started meanwhile and took it over.
 */
async function openDatabase(config, logger) {
    let url = config.databaseUrl;
    let source = 'env';
    let embedded;
    if (!url) {
        const service = (0, runtime_file_1.readRuntimeInfo)(config.homeDir);
        if (service && !service.embedded.postgres) {
            url = service.databaseUrl;
            source = 'service';
        }
        else {
            embedded = await (0, embedded_postgres_1.startEmbeddedPostgres)({ dataDir: node_path_1.default.join(config.homeDir, 'pg'), logger, transient: true });
            url = embedded.url;
            source = 'embedded';
        }
    }
    try {
        await (0, migrate_1.migrate)((source === 'env' && config.directDatabaseUrl) || url, (m) => logger.info(m));
    }
    catch (e) {
        await embedded?.stop().catch(() => { });
        throw new Error(`cannot use the database ${safeUrl(url)}: ${describeError(e)}`);
    }
    const db = (0, client_1.createDb)(url, { max: 2 });
    return {
        db,
        url,
        source,
        async close() {
            await db.$disconnect().catch(() => { });
            await embedded?.stop();
        },
    };
}
/** One readable message for any error (pg connection failures are AggregateErrors with an empty message). */
function describeError(e) {
    if (e instanceof AggregateError && !e.message)
        return e.errors.map(describeError).join('; ');
    if (e instanceof Error)
        return e.message || e.code || e.name;
    return String(e);
}
