"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_ROOT_STATE_DIR = void 0;
exports.canReach = canReach;
exports.ensureRootDir = ensureRootDir;
exports.reachableBinDir = reachableBinDir;
exports.reachableDataDir = reachableDataDir;
const node_crypto_1 = require("node:crypto");
const node_fs_1 = __importDefault(require("node:fs"));
const node_path_1 = __importDefault(require("node:path"));
const process_utils_1 = require("./process-utils");
/**
 * Where the embedded PostgreSQL's binaries and cluster live when we run as root (issue 9.13).
 *
 * PostgreSQL refuses to run as root, so root runs it as the `postgres` user, who must be able to reach the
 * binaries (in node_modules) and the cluster (`./.switchyard/pg/data`). A checkout under a private directory
 * (root's home, mode 0700, or a `mktemp -d` folder) blocks that. Then, and only then:
 * - the binaries (the platform package's `native/` folder, 60 MB) are copied once to
 *   `<state>/pg-bin-<hash>` (root-owned, 0755), the hash of the binaries' content (shared by every checkout
 *   of the same version);
 * - the cluster lives in `<state>/pg-<hash>/data` (owned by `postgres`, 0700), the hash naming the data
 *   directory's real path, and `<dataDir>/data` becomes a symlink to it, so it is found again on every start
 *   and by the CLI, and a person sees where it is.
 * `<state>` is `SWITCHYARD_ROOT_STATE_DIR`, default `/var/lib/switchyard` (persistent, unlike /var/tmp, which
 * may be cleaned). Every directory we use there must be root-owned and not writable by group or others: a
 * folder someone else prepared is refused, never trusted.
 */
var env_1 = require("../config/env");
Object.defineProperty(exports, "DEFAULT_ROOT_STATE_DIR", { enumerable: true, get: function () { return env_1.DEFAULT_ROOT_STATE_DIR; } });
function canReach(target, ids) {
    try {
        (0, process_utils_1.assertReachable)(target, ids, 'x', 'x');
        return true;
    }
    catch {
        return false;
    }
}
const shortHash = (...parts) => (0, node_crypto_1.createHash)('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);
/** Creates `dir` (0755) if needed, then insists it is a real directory owned by root and writable by root only. */
function ensureRootDir(dir) {
    node_fs_1.default.mkdirSync(dir, { recursive: true, mode: 0o755 });
    const st = node_fs_1.default.lstatSync(dir);
    if (!st.isDirectory() || st.isSymbolicLink())
        throw new Error(`refusing ${dir} for embedded PostgreSQL: it is not a plain directory`);
    if (st.uid !== 0)
        throw new Error(`refusing ${dir} for embedded PostgreSQL: it belongs to uid ${st.uid}, not root`);
    if ((st.mode & 0o022) !== 0)
        throw new Error(`refusing ${dir} for embedded PostgreSQL: it is writable by group or others (mode ${(st.mode & 0o777).toString(8)})`);
    if ((st.mode & 0o005) !== 0o005)
        node_fs_1.default.chmodSync(dir, 0o755); // the postgres user must read and enter it
}
/** `binDir` when the postgres user reaches it, else a reachable copy of its platform folder. */
function reachableBinDir(binDir, ids, stateDir) {
    if (canReach(node_path_1.default.join(binDir, 'postgres'), ids))
        return binDir;
    const nativeDir = node_fs_1.default.realpathSync(node_path_1.default.dirname(binDir));
    const binName = node_path_1.default.basename(binDir);
    // Keyed by the binaries' content, so every checkout of the same version shares one copy.
    const content = (0, node_crypto_1.createHash)('sha256');
    for (const tool of ['postgres', 'initdb'])
        content.update(node_fs_1.default.readFileSync(node_path_1.default.join(nativeDir, binName, tool)));
    const dest = node_path_1.default.join(stateDir, `pg-bin-${content.digest('hex').slice(0, 16)}`);
    ensureRootDir(stateDir);
    if (!node_fs_1.default.existsSync(node_path_1.default.join(dest, '.complete'))) {
        const tmp = `${dest}.${process.pid}.tmp`;
        node_fs_1.default.rmSync(tmp, { recursive: true, force: true });
        node_fs_1.default.cpSync(nativeDir, tmp, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
        node_fs_1.default.chmodSync(tmp, 0o755);
        node_fs_1.default.writeFileSync(node_path_1.default.join(tmp, '.complete'), `${nativeDir}\n`);
        try {
            node_fs_1.default.rmSync(dest, { recursive: true, force: true });
            node_fs_1.default.renameSync(tmp, dest);
        }
        catch (e) {
            node_fs_1.default.rmSync(tmp, { recursive: true, force: true });
            if (!node_fs_1.default.existsSync(node_path_1.default.join(dest, '.complete')))
                throw e; // else another process made it meanwhile
        }
    }
    ensureRootDir(dest);
    return node_path_1.default.join(dest, binName);
}
/** `<dataDir>/data` when the postgres user reaches it (or it already holds a cluster), else a reachable place. */
function reachableDataDir(dataDir, ids, stateDir) {
    const local = node_path_1.default.join(dataDir, 'data');
    let link;
    try {
        link = node_fs_1.default.lstatSync(local);
    }
    catch {
        link = undefined;
    }
    if (link && !link.isSymbolicLink())
        return { pgData: local, scratch: dataDir };
    if (!link && canReach(local, ids))
        return { pgData: local, scratch: dataDir };
    let base;
    if (link) {
        base = node_path_1.default.dirname(node_path_1.default.resolve(dataDir, node_fs_1.default.readlinkSync(local))); // placed before: keep using it
    }
    else {
        base = node_path_1.default.join(stateDir, `pg-${shortHash(node_fs_1.default.realpathSync(dataDir))}`);
    }
    ensureRootDir(node_path_1.default.dirname(base));
    ensureRootDir(base);
    const pgData = node_path_1.default.join(base, 'data');
    if (!link)
        node_fs_1.default.symlinkSync(pgData, local);
    return { pgData, scratch: base, relocated: base };
}
