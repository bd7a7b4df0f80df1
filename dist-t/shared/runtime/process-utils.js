"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.OutputTail = exports.sleep = exports.silentLogger = void 0;
exports.isRoot = isRoot;
exports.isAlive = isAlive;
exports.processCommand = processCommand;
exports.lookupUser = lookupUser;
exports.assertReachable = assertReachable;
exports.findOnPath = findOnPath;
exports.isPortFree = isPortFree;
exports.freePort = freePort;
exports.choosePort = choosePort;
exports.readIntFile = readIntFile;
exports.writePrivateFile = writePrivateFile;
exports.readOwner = readOwner;
exports.writeOwner = writeOwner;
exports.ownedBy = ownedBy;
exports.shouldTakeOver = shouldTakeOver;
exports.spawnWatchdog = spawnWatchdog;
exports.settlesWithin = settlesWithin;
exports.stopOwnedChild = stopOwnedChild;
exports.waitForExit = waitForExit;
const node_child_process_1 = require("node:child_process");
const node_crypto_1 = require("node:crypto");
const node_fs_1 = __importDefault(require("node:fs"));
const node_net_1 = __importDefault(require("node:net"));
const node_os_1 = __importDefault(require("node:os"));
const node_path_1 = __importDefault(require("node:path"));
exports.silentLogger = { debug() { }, info() { }, warn() { }, error() { } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
exports.sleep = sleep;
function isRoot() {
    return typeof process.getuid === 'function' && process.getuid() === 0;
}
/** True when a process with this pid exists (EPERM: it exists but belongs to someone else). */
function isAlive(pid) {
    if (!Number.isInteger(pid) || pid <= 0)
        return false;
    try {
        process.kill(pid, 0);
        return true;
    }
    catch (e) {
        return e.code === 'EPERM';
    }
}
/** The command line of a live process ('' when unknown): /proc on Linux, `ps` elsewhere. */
function processCommand(pid) {
    try {
        return node_fs_1.default.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    }
    catch {
        try {
            return (0, node_child_process_1.execFileSync)('ps', ['-p', String(pid), '-o', 'command='], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
        }
        catch {
            return '';
        }
    }
}
/** uid and gid of a system user, or null when there is none. */
function lookupUser(name) {
    try {
        const uid = Number((0, node_child_process_1.execFileSync)('id', ['-u', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
        const gid = Number((0, node_child_process_1.execFileSync)('id', ['-g', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
        return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
    }
    catch {
        return null;
    }
}
/**
 * Throws a clear error when a user (uid/gid) cannot reach `target`: every ancestor directory needs its
 * execute bit for that user. Used when root hands the data directory to the `postgres` system user.
 */
function assertReachable(target, ids, who, hint) {
    let dir = node_path_1.default.resolve(target);
    const chain = [];
    for (;;) {
        chain.unshift(dir);
        const parent = node_path_1.default.dirname(dir);
        if (parent === dir)
            break;
        dir = parent;
    }
    for (const d of chain) {
        let st;
        try {
            st = node_fs_1.default.statSync(d);
        }
        catch {
            return; // not created yet: its parents were checked
        }
        if (!st.isDirectory())
            continue;
        const bit = st.uid === ids.uid ? 0o100 : st.gid === ids.gid ? 0o010 : 0o001;
        if ((st.mode & bit) === 0)
            throw new Error(`${who} cannot enter ${d} (needed for ${target}): ${hint}`);
    }
}
/** The full path of an executable found on PATH, or null. */
function findOnPath(name, envPath) {
    for (const dir of (envPath ?? '').split(node_path_1.default.delimiter)) {
        if (!dir)
            continue;
        const candidate = node_path_1.default.join(dir, name);
        try {
            if (node_fs_1.default.statSync(candidate).isFile()) {
                node_fs_1.default.accessSync(candidate, node_fs_1.default.constants.X_OK);
                return candidate;
            }
        }
        catch {
            // keep looking
        }
    }
    return null;
}
function isPortFree(port, host = '127.0.0.1') {
    return new Promise((resolve) => {
        const srv = node_net_1.default.createServer();
        srv.unref();
        srv.once('error', () => resolve(false));
        srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
    });
}
function freePort(host = '127.0.0.1') {
    return new Promise((resolve, reject) => {
        const srv = node_net_1.default.createServer();
        srv.unref();
        srv.once('error', reject);
        srv.listen({ port: 0, host, exclusive: true }, () => {
            const { port } = srv.address();
            srv.close(() => resolve(port));
        });
    });
}
/** `preferred` when nothing listens there, else a free port from the OS. */
async function choosePort(preferred) {
    if (preferred && (await isPortFree(preferred)))
        return preferred;
    return freePort();
}
function readIntFile(file) {
    try {
        const n = Number(node_fs_1.default.readFileSync(file, 'utf8').trim());
        return Number.isInteger(n) && n > 0 ? n : undefined;
    }
    catch {
        return undefined;
    }
}
/** Writes a file with a mode that umask cannot widen, replacing it atomically. */
function writePrivateFile(file, content, mode = 0o600) {
    const tmp = `${file}.${process.pid}.tmp`;
    node_fs_1.default.writeFileSync(tmp, content, { mode });
    node_fs_1.default.chmodSync(tmp, mode);
    node_fs_1.default.renameSync(tmp, file);
}
function readOwner(file) {
    try {
        const o = JSON.parse(node_fs_1.default.readFileSync(file, 'utf8'));
        return Number.isInteger(o.pid) ? { pid: o.pid, transient: !!o.transient, token: String(o.token) } : null;
    }
    catch {
        return null;
    }
}
/** Records this handle as the owner; returns its token. */
function writeOwner(file, transient) {
    const token = (0, node_crypto_1.randomBytes)(8).toString('hex');
    writePrivateFile(file, JSON.stringify({ pid: process.pid, transient, token }), 0o644);
    return token;
}
function ownedBy(file, token) {
    return !!token && readOwner(file)?.token === token;
}
/** Whether a handle finding the service running should take over stopping it. */
function shouldTakeOver(file, transient) {
    const owner = readOwner(file);
    if (!owner || !isAlive(owner.pid))
        return true;
    return owner.transient && !transient;
}
/**
 * A tiny shell loop that sends `signal` to `childPid` once this process is gone (even after SIGKILL, where
 * no exit handler runs), provided the owner file still names this process. It exits by itself once the
 * child is gone. Not available on Windows.
 */
function spawnWatchdog(childPid, signal, ownerFile, parentPid = process.pid) {
    if (node_os_1.default.platform() === 'win32')
        return;
    const script = [
        'p="$1"; c="$2"; s="$3"; f="$4"',
        'while kill -0 "$p" 2>/dev/null; do kill -0 "$c" 2>/dev/null || exit 0; sleep 1; done',
        'case "$(cat "$f" 2>/dev/null)" in *"\\"pid\\":$p,"*) kill -"$s" "$c" 2>/dev/null;; esac',
    ].join('\n');
    try {
        const child = (0, node_child_process_1.spawn)('/bin/sh', ['-c', script, 'switchyard-watchdog', String(parentPid), String(childPid), signal, ownerFile], {
            detached: true,
            stdio: 'ignore',
        });
        child.on('error', () => { });
        child.unref();
    }
    catch {
        // best effort: the service's own stop() remains the main path
    }
}
/** True when `p` settles within `ms` (the timer is cleared either way, so nothing lingers). */
function settlesWithin(p, ms) {
    let timer;
    return Promise.race([p.then(() => true), new Promise((r) => (timer = setTimeout(() => r(false), ms)))]).finally(() => clearTimeout(timer));
}
/**
 * Stops an embedded server this process may own: when another process has taken it over, only our pipes are
 * dropped; otherwise the polite signal, and the hard one if it is still alive after `graceMs`.
 */
async function stopOwnedChild(o) {
    if (!ownedBy(o.ownerFile, o.token)) {
        // Someone else (the service) is responsible now: leave the server running, drop our pipes.
        o.own?.stdout?.destroy();
        o.own?.stderr?.destroy();
        o.own?.unref();
        return;
    }
    node_fs_1.default.rmSync(o.ownerFile, { force: true });
    if (!isAlive(o.pid))
        return;
    try {
        process.kill(o.pid, o.signal);
    }
    catch {
        return;
    }
    const done = o.ownExit ? await settlesWithin(o.ownExit, o.graceMs) : await waitForExit(o.pid, o.graceMs);
    if (!done && isAlive(o.pid)) {
        o.logger.warn(`embedded ${o.name} did not stop within ${o.graceMs / 1000} s: sending ${o.hardSignal}`);
        try {
            process.kill(o.pid, o.hardSignal);
        }
        catch {
            // gone meanwhile
        }
        await waitForExit(o.pid, 5_000);
    }
    o.logger.info(`embedded ${o.name} stopped`);
}
/** Waits until a process is gone; false on timeout. */
async function waitForExit(pid, timeoutMs) {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
        if (!isAlive(pid))
            return true;
        await (0, exports.sleep)(100);
    }
    return !isAlive(pid);
}
/** Keeps the last few lines a child printed, for error messages. */
class OutputTail {
    max;
    lines = [];
    constructor(max = 20) {
        this.max = max;
    }
    push(chunk) {
        const fresh = chunk.split(/\r?\n/).filter((l) => l.trim() !== '');
        this.lines.push(...fresh);
        if (this.lines.length > this.max)
            this.lines = this.lines.slice(-this.max);
        return fresh;
    }
    text() {
        return this.lines.join(' | ');
    }
}
exports.OutputTail = OutputTail;
