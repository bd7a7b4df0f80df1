"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.RedisNotFoundError = exports.REDIS_NOT_FOUND_MESSAGE = exports.DEFAULT_REDIS_PORT = void 0;
exports.findRedisServer = findRedisServer;
exports.redisPing = redisPing;
exports.startEmbeddedRedis = startEmbeddedRedis;
const node_child_process_1 = require("node:child_process");
const node_crypto_1 = require("node:crypto");
const node_fs_1 = __importDefault(require("node:fs"));
const node_net_1 = __importDefault(require("node:net"));
const node_path_1 = __importDefault(require("node:path"));
const env_1 = require("../config/env");
const process_utils_1 = require("./process-utils");
exports.DEFAULT_REDIS_PORT = 6380;
exports.REDIS_NOT_FOUND_MESSAGE = 'redis-server not found on PATH: install Redis (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL=redis://host:6379';
/** Thrown when `redis-server` is not on PATH; its message is one line meant to be printed as is. */
class RedisNotFoundError extends Error {
    constructor() {
        super(exports.REDIS_NOT_FOUND_MESSAGE);
        this.name = 'RedisNotFoundError';
    }
}
exports.RedisNotFoundError = RedisNotFoundError;
function findRedisServer(searchPath) {
    const found = (0, process_utils_1.findOnPath)('redis-server', searchPath);
    if (!found)
        throw new RedisNotFoundError();
    return found;
}
/** Answers once Redis replies PONG (a server still loading its AOF answers -LOADING and is retried). */
function redisPing(port, password, timeoutMs = 1000) {
    return new Promise((resolve) => {
        const socket = node_net_1.default.connect({ host: '127.0.0.1', port });
        let buf = '';
        const done = (ok) => {
            socket.destroy();
            resolve(ok);
        };
        socket.setTimeout(timeoutMs, () => done(false));
        socket.on('error', () => done(false));
        socket.on('connect', () => {
            const auth = `*2\r\n$4\r\nAUTH\r\n$${Buffer.byteLength(password)}\r\n${password}\r\n`;
            socket.write(`${password ? auth : ''}*1\r\n$4\r\nPING\r\n`);
        });
        socket.on('data', (d) => {
            buf += d.toString('utf8');
            // One single-line reply per command sent (+OK / -ERR ..., then +PONG / -LOADING ...).
            if (buf.split('\r\n').length - 1 >= (password ? 2 : 1))
                done(buf.includes('+PONG'));
        });
    });
}
const quote = (s) => JSON.stringify(s); // redis.conf accepts double-quoted strings with \" and \\ escapes
async function startEmbeddedRedis(opts) {
    const logger = opts.logger ?? process_utils_1.silentLogger;
    const bin = findRedisServer(opts.env ? opts.env.PATH : (0, env_1.embeddedSettings)().searchPath);
    const dir = node_path_1.default.resolve(opts.dir);
    node_fs_1.default.mkdirSync(dir, { recursive: true });
    const portFile = node_path_1.default.join(dir, 'port');
    const passwordFile = node_path_1.default.join(dir, 'password');
    const pidFile = node_path_1.default.join(dir, 'redis.pid');
    const ownerFile = node_path_1.default.join(dir, 'owner');
    const confFile = node_path_1.default.join(dir, 'redis.conf');
    let password = '';
    try {
        password = node_fs_1.default.readFileSync(passwordFile, 'utf8').trim();
    }
    catch {
        // first start
    }
    if (!password) {
        password = (0, node_crypto_1.randomBytes)(24).toString('hex');
        (0, process_utils_1.writePrivateFile)(passwordFile, `${password}\n`);
    }
    // A server already running on this directory (another process of the service, or an orphan) is reused:
    // two servers writing one append-only file would corrupt it.
    const runningPid = (0, process_utils_1.readIntFile)(pidFile);
    const runningPort = (0, process_utils_1.readIntFile)(portFile);
    if (runningPid && (0, process_utils_1.isAlive)(runningPid) && /redis/.test((0, process_utils_1.processCommand)(runningPid)) && runningPort) {
        const until = Date.now() + 30_000;
        while ((0, process_utils_1.isAlive)(runningPid)) {
            if (await redisPing(runningPort, password))
                return attach(runningPid, runningPort, false);
            if (Date.now() > until)
                throw new Error(`embedded Redis (pid ${runningPid}) is running in ${dir} but does not answer on port ${runningPort}`);
            await (0, process_utils_1.sleep)(200);
        }
    }
    // The port is chosen free, but another process may bind it before Redis does: then try another one.
    for (let attempt = 1;; attempt++) {
        const port = opts.port ?? (await (0, process_utils_1.choosePort)(attempt === 1 ? ((0, process_utils_1.readIntFile)(portFile) ?? exports.DEFAULT_REDIS_PORT) : undefined));
        (0, process_utils_1.writePrivateFile)(portFile, `${port}\n`, 0o644);
        (0, process_utils_1.writePrivateFile)(confFile, [
            `port ${port}`,
            'bind 127.0.0.1',
            'protected-mode yes',
            `dir ${quote(dir)}`,
            `pidfile ${quote(pidFile)}`,
            'daemonize no',
            'appendonly yes',
            'appendfsync everysec',
            'save ""',
            'maxmemory-policy noeviction',
            `requirepass ${quote(password)}`,
            'logfile ""',
            '',
        ].join('\n'));
        const tail = new process_utils_1.OutputTail();
        const child = (0, node_child_process_1.spawn)(bin, [confFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
        const onData = (b) => tail.push(b.toString('utf8')).forEach((l) => logger.debug(`redis: ${l}`));
        child.stdout?.on('data', onData);
        child.stderr?.on('data', onData);
        let exited = false;
        let spawnError;
        child.on('error', (e) => (spawnError = e));
        const exitedPromise = new Promise((r) => child.on('exit', () => ((exited = true), r())));
        const until = Date.now() + (opts.startTimeoutMs ?? 30_000);
        let ready = false;
        while (!ready && !exited) {
            if (spawnError)
                throw new Error(`cannot start redis-server: ${spawnError.message}`);
            if (await redisPing(port, password, 500))
                ready = true;
            else if (Date.now() > until) {
                child.kill('SIGKILL');
                throw new Error(`redis-server did not answer PING within ${opts.startTimeoutMs ?? 30_000} ms: ${tail.text()}`);
            }
            else
                await (0, process_utils_1.sleep)(50);
        }
        if (ready) {
            const token = (0, process_utils_1.writeOwner)(ownerFile, false);
            logger.info(`embedded Redis listening on 127.0.0.1:${port}`);
            return attach(child.pid, port, true, token, child, exitedPromise);
        }
        if (!opts.port && attempt < 5 && /address already in use/i.test(tail.text())) {
            logger.debug(`embedded redis: port ${port} taken meanwhile, trying another`);
            continue;
        }
        throw new Error(`redis-server exited during start: ${tail.text()}`);
    }
    function attach(pid, at, started, token, own, ownExit) {
        if (!started && (0, process_utils_1.shouldTakeOver)(ownerFile, false))
            token = (0, process_utils_1.writeOwner)(ownerFile, false);
        if ((0, process_utils_1.ownedBy)(ownerFile, token))
            (0, process_utils_1.spawnWatchdog)(pid, 'TERM', ownerFile);
        let stopped = false;
        return {
            url: `redis://:${encodeURIComponent(password)}@127.0.0.1:${at}`,
            port: at,
            started,
            async stop() {
                if (stopped)
                    return;
                stopped = true;
                // SIGTERM: Redis flushes the AOF and exits.
                await (0, process_utils_1.stopOwnedChild)({ name: 'Redis', pid, ownerFile, token, own, ownExit, signal: 'SIGTERM', hardSignal: 'SIGKILL', graceMs: 15_000, logger });
            },
        };
    }
}
