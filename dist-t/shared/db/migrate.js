"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.migrate = migrate;
const node_crypto_1 = require("node:crypto");
const node_fs_1 = __importDefault(require("node:fs"));
const node_path_1 = __importDefault(require("node:path"));
const pg_1 = require("pg");
function migrationsDir() {
    // Works from source (shared/db) and from the build (dist/shared/db).
    for (const candidate of [node_path_1.default.resolve(__dirname, '../../prisma/migrations'), node_path_1.default.resolve(__dirname, '../../../prisma/migrations')]) {
        if (node_fs_1.default.existsSync(candidate))
            return candidate;
    }
    throw new Error('prisma/migrations not found');
}
/**
 * Applies prisma/migrations in order, bookkeeping in `_prisma_migrations` exactly as `prisma migrate deploy`
 * does (same table, same checksums), so either tool can take over. We carry our own applier because Prisma 7's
 * schema engine is a native binary fetched from Prisma's CDN at first use, which offline machines cannot reach.
 * An advisory lock makes concurrent starts (several API/worker processes) safe.
 */
async function migrate(databaseUrl, log = () => { }) {
    const dir = migrationsDir();
    const names = node_fs_1.default.readdirSync(dir).filter((n) => node_fs_1.default.existsSync(node_path_1.default.join(dir, n, 'migration.sql'))).sort();
    const client = new pg_1.Client({ connectionString: databaseUrl });
    await client.connect();
    const applied = [];
    try {
        await client.query('SELECT pg_advisory_lock(72707369)');
        await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
        const done = new Set((await client.query('SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL')).rows.map((r) => r.migration_name));
        for (const name of names) {
            if (done.has(name))
                continue;
            const sql = node_fs_1.default.readFileSync(node_path_1.default.join(dir, name, 'migration.sql'), 'utf8');
            const checksum = (0, node_crypto_1.createHash)('sha256').update(sql).digest('hex');
            await client.query('BEGIN');
            try {
                await client.query(sql);
                await client.query('INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)', [(0, node_crypto_1.randomUUID)(), checksum, name]);
                await client.query('COMMIT');
            }
            catch (e) {
                await client.query('ROLLBACK');
                throw new Error(`migration ${name} failed: ${e.message}`);
            }
            applied.push(name);
            log(`applied migration ${name}`);
        }
    }
    finally {
        await client.query('SELECT pg_advisory_unlock(72707369)').catch(() => { });
        await client.end();
    }
    return applied;
}
