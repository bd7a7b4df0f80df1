"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.startPgBouncer = startPgBouncer;
/**
 * PgBouncer (the Debian package's `pgbouncer` on PATH) in transaction pooling mode in front of the test
 * PostgreSQL, on a loopback port: the way hosted PostgreSQL is usually reached at scale. Every database name
 * is passed through (`* = host=… port=…`), so the per-file test databases work through it unchanged.
 * PgBouncer refuses to run as root; it is started as the `postgres` (else `nobody`) user then.
 */
const node_child_process_1 = require("node:child_process");
const node_fs_1 = __importDefault(require("node:fs"));
const node_path_1 = __importDefault(require("node:path"));
const pg_1 = require("pg");
const process_utils_1 = require("../../../shared/runtime/process-utils");
async function startPgBouncer(dir, upstreamUrl, opts = {}) {
    node_fs_1.default.mkdirSync(dir, { recursive: true });
    const up = new URL(upstreamUrl);
    const user = decodeURIComponent(up.username || 'postgres');
    const port = await (0, process_utils_1.freePort)();
    const conf = node_path_1.default.join(dir, 'pgbouncer.ini');
    const users = node_path_1.default.join(dir, 'userlist.txt');
    node_fs_1.default.writeFileSync(users, `"${user}" "${decodeURIComponent(up.password)}"\n`);
    node_fs_1.default.writeFileSync(conf, [
        '[databases]',
        `* = host=${up.hostname} port=${up.port || 5432}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${users}`,
        'pool_mode = transaction',
        'max_client_conn = 2000',
        `default_pool_size = ${opts.poolSize ?? 8}`,
        'server_reset_query =',
        'ignore_startup_parameters = extra_float_digits,options',
        `logfile = ${node_path_1.default.join(dir, 'pgbouncer.log')}`,
        `pidfile = ${node_path_1.default.join(dir, 'pgbouncer.pid')}`,
        '',
    ].join('\n'));
    const args = [conf];
    if ((0, process_utils_1.isRoot)()) {
        const who = (0, process_utils_1.lookupUser)('postgres') ? 'postgres' : 'nobody';
        const ids = (0, process_utils_1.lookupUser)(who);
        node_fs_1.default.chownSync(dir, ids.uid, ids.gid);
        for (const f of [conf, users])
            node_fs_1.default.chownSync(f, ids.uid, ids.gid);
        args.unshift('-u', who);
    }
    const child = (0, node_child_process_1.spawn)('pgbouncer', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (d) => (output += d));
    child.stderr?.on('data', (d) => (output += d));
    const exited = new Promise((r) => child.once('exit', () => r()));
    const url = new URL(upstreamUrl);
    url.port = String(port);
    url.hostname = '127.0.0.1';
    const until = Date.now() + 15_000;
    for (;;) {
        const c = new pg_1.Client({ connectionString: url.toString() });
        try {
            await c.connect();
            await c.query('SELECT 1');
            await c.end();
            break;
        }
        catch (e) {
            await c.end().catch(() => undefined);
            if (child.exitCode !== null)
                throw new Error(`pgbouncer exited (${child.exitCode}): ${output.trim()}`);
            if (Date.now() > until)
                throw new Error(`pgbouncer did not answer within 15 s: ${e.message}`);
            await (0, process_utils_1.sleep)(100);
        }
    }
    return {
        port,
        url: url.toString(),
        async stop() {
            if (child.exitCode !== null || child.signalCode !== null)
                return;
            child.kill('SIGINT');
            await exited;
        },
    };
}
