import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { assertReachable } from './process-utils';

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
export const DEFAULT_ROOT_STATE_DIR = '/var/lib/switchyard';

export function rootStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.SWITCHYARD_ROOT_STATE_DIR || DEFAULT_ROOT_STATE_DIR);
}

type Ids = { uid: number; gid: number };

export function canReach(target: string, ids: Ids): boolean {
  try {
    assertReachable(target, ids, 'x', 'x');
    return true;
  } catch {
    return false;
  }
}

const shortHash = (...parts: string[]) => createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);

/** Creates `dir` (0755) if needed, then insists it is a real directory owned by root and writable by root only. */
export function ensureRootDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const st = fs.lstatSync(dir);
  if (!st.isDirectory() || st.isSymbolicLink()) throw new Error(`refusing ${dir} for embedded PostgreSQL: it is not a plain directory`);
  if (st.uid !== 0) throw new Error(`refusing ${dir} for embedded PostgreSQL: it belongs to uid ${st.uid}, not root`);
  if ((st.mode & 0o022) !== 0) throw new Error(`refusing ${dir} for embedded PostgreSQL: it is writable by group or others (mode ${(st.mode & 0o777).toString(8)})`);
  if ((st.mode & 0o005) !== 0o005) fs.chmodSync(dir, 0o755); // the postgres user must read and enter it
}

/** `binDir` when the postgres user reaches it, else a reachable copy of its platform folder. */
export function reachableBinDir(binDir: string, ids: Ids, stateDir: string): string {
  if (canReach(path.join(binDir, 'postgres'), ids)) return binDir;
  const nativeDir = fs.realpathSync(path.dirname(binDir));
  const binName = path.basename(binDir);
  // Keyed by the binaries' content, so every checkout of the same version shares one copy.
  const content = createHash('sha256');
  for (const tool of ['postgres', 'initdb']) content.update(fs.readFileSync(path.join(nativeDir, binName, tool)));
  const dest = path.join(stateDir, `pg-bin-${content.digest('hex').slice(0, 16)}`);
  ensureRootDir(stateDir);
  if (!fs.existsSync(path.join(dest, '.complete'))) {
    const tmp = `${dest}.${process.pid}.tmp`;
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.cpSync(nativeDir, tmp, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    fs.chmodSync(tmp, 0o755);
    fs.writeFileSync(path.join(tmp, '.complete'), `${nativeDir}\n`);
    try {
      fs.rmSync(dest, { recursive: true, force: true });
      fs.renameSync(tmp, dest);
    } catch (e) {
      fs.rmSync(tmp, { recursive: true, force: true });
      if (!fs.existsSync(path.join(dest, '.complete'))) throw e; // else another process made it meanwhile
    }
  }
  ensureRootDir(dest);
  return path.join(dest, binName);
}

export interface DataPlacement {
  /** The cluster directory postgres is given (`-D`). */
  pgData: string;
  /** A folder the postgres user can read, for the initdb password file. */
  scratch: string;
  /** The folder outside the checkout holding the cluster, when it had to move. */
  relocated?: string;
}

/** `<dataDir>/data` when the postgres user reaches it (or it already holds a cluster), else a reachable place. */
export function reachableDataDir(dataDir: string, ids: Ids, stateDir: string): DataPlacement {
  const local = path.join(dataDir, 'data');
  let link: fs.Stats | undefined;
  try {
    link = fs.lstatSync(local);
  } catch {
    link = undefined;
  }
  if (link && !link.isSymbolicLink()) return { pgData: local, scratch: dataDir };
  if (!link && canReach(local, ids)) return { pgData: local, scratch: dataDir };

  let base: string;
  if (link) {
    base = path.dirname(path.resolve(dataDir, fs.readlinkSync(local))); // placed before: keep using it
  } else {
    base = path.join(stateDir, `pg-${shortHash(fs.realpathSync(dataDir))}`);
  }
  ensureRootDir(path.dirname(base));
  ensureRootDir(base);
  const pgData = path.join(base, 'data');
  if (!link) fs.symlinkSync(pgData, local);
  return { pgData, scratch: base, relocated: base };
}
