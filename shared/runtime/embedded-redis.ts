import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { embeddedSettings } from '../config/env';
import {
  choosePort,
  findOnPath,
  isAlive,
  OutputTail,
  ownedBy,
  processCommand,
  readIntFile,
  shouldTakeOver,
  silentLogger,
  sleep,
  spawnWatchdog,
  writeOwner,
  writePrivateFile,
  type RuntimeLogger,
  stopOwnedChild,
} from './process-utils';

/**
 * `redis-server` from PATH as a child process (decisions.md section 1, "embedded default"), with the
 * append-only file on so queued jobs survive a restart of the single-machine service.
 *
 * Layout of `dir` (e.g. `./.switchyard/redis`): redis.conf (0600, holds the password), password, port,
 * redis.pid, owner, appendonlydir/.
 *
 * The child also stops when this process dies without calling stop() (SIGKILL, crash): a small shell
 * watchdog (see process-utils `spawnWatchdog`) sends it SIGTERM, on which Redis flushes the AOF and exits.
 */
export interface EmbeddedRedisOptions {
  dir: string;
  /** Port to listen on; default: the stored one, else 6380, else any free port. */
  port?: number;
  logger?: RuntimeLogger;
  /** Environment whose PATH is searched for `redis-server`; default this process's (shared/config/env.ts). */
  env?: { PATH?: string };
  startTimeoutMs?: number;
}

export interface EmbeddedRedis {
  url: string;
  port: number;
  started: boolean;
  stop(): Promise<void>;
}

export const DEFAULT_REDIS_PORT = 6380;

export const REDIS_NOT_FOUND_MESSAGE =
  'redis-server not found on PATH: install Redis (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_URL=redis://host:6379';

/** Thrown when `redis-server` is not on PATH; its message is one line meant to be printed as is. */
export class RedisNotFoundError extends Error {
  constructor() {
    super(REDIS_NOT_FOUND_MESSAGE);
    this.name = 'RedisNotFoundError';
  }
}

export function findRedisServer(searchPath: string | undefined): string {
  const found = findOnPath('redis-server', searchPath);
  if (!found) throw new RedisNotFoundError();
  return found;
}

/** Answers once Redis replies PONG (a server still loading its AOF answers -LOADING and is retried). */
export function redisPing(port: number, password: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let buf = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.on('error', () => done(false));
    // Something else on the port that closes the connection without a reply: its timeout went with the socket.
    socket.on('close', () => done(false));
    socket.on('connect', () => {
      const auth = `*2\r\n$4\r\nAUTH\r\n$${Buffer.byteLength(password)}\r\n${password}\r\n`;
      socket.write(`${password ? auth : ''}*1\r\n$4\r\nPING\r\n`);
    });
    socket.on('data', (d) => {
      buf += d.toString('utf8');
      // One single-line reply per command sent (+OK / -ERR ..., then +PONG / -LOADING ...).
      if (buf.split('\r\n').length - 1 >= (password ? 2 : 1)) done(buf.includes('+PONG'));
    });
  });
}

const quote = (s: string) => JSON.stringify(s); // redis.conf accepts double-quoted strings with \" and \\ escapes

export async function startEmbeddedRedis(opts: EmbeddedRedisOptions): Promise<EmbeddedRedis> {
  const logger = opts.logger ?? silentLogger;
  const bin = findRedisServer(opts.env ? opts.env.PATH : embeddedSettings().searchPath);
  const dir = path.resolve(opts.dir);
  fs.mkdirSync(dir, { recursive: true });
  const portFile = path.join(dir, 'port');
  const passwordFile = path.join(dir, 'password');
  const pidFile = path.join(dir, 'redis.pid');
  const ownerFile = path.join(dir, 'owner');
  const confFile = path.join(dir, 'redis.conf');

  let password = '';
  try {
    password = fs.readFileSync(passwordFile, 'utf8').trim();
  } catch {
    // first start
  }
  if (!password) {
    password = randomBytes(24).toString('hex');
    writePrivateFile(passwordFile, `${password}\n`);
  }

  // A server already running on this directory (another process of the service, or an orphan) is reused:
  // two servers writing one append-only file would corrupt it.
  const runningPid = readIntFile(pidFile);
  const runningPort = readIntFile(portFile);
  if (runningPid && isAlive(runningPid) && /redis/.test(processCommand(runningPid)) && runningPort) {
    const until = Date.now() + 30_000;
    while (isAlive(runningPid)) {
      if (await redisPing(runningPort, password)) return attach(runningPid, runningPort, false);
      if (Date.now() > until) throw new Error(`embedded Redis (pid ${runningPid}) is running in ${dir} but does not answer on port ${runningPort}`);
      await sleep(200);
    }
  }

  // The port is chosen free, but another process may bind it before Redis does: then try another one.
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await choosePort(attempt === 1 ? (readIntFile(portFile) ?? DEFAULT_REDIS_PORT) : undefined));
    writePrivateFile(portFile, `${port}\n`, 0o644);
    writePrivateFile(
      confFile,
      [
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
      ].join('\n'),
    );

    const tail = new OutputTail();
    // Its own process group (detached; the service stops it, or the watchdog once the service is gone): a terminal's
    // Ctrl-C, or a signal to npm start's group, reaches the service alone, which stops Redis after its own work.
    const child: ChildProcess = spawn(bin, [confFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const onData = (b: Buffer) => tail.push(b.toString('utf8')).forEach((l) => logger.debug(`redis: ${l}`));
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    let exited = false;
    let spawnError: Error | undefined;
    child.on('error', (e) => (spawnError = e));
    const exitedPromise = new Promise<void>((r) => child.on('exit', () => ((exited = true), r())));

    const until = Date.now() + (opts.startTimeoutMs ?? 30_000);
    let ready = false;
    while (!ready && !exited) {
      if (spawnError) throw new Error(`cannot start redis-server: ${spawnError.message}`);
      if (await redisPing(port, password, 500)) ready = true;
      else if (Date.now() > until) {
        child.kill('SIGKILL');
        throw new Error(`redis-server did not answer PING within ${opts.startTimeoutMs ?? 30_000} ms: ${tail.text()}`);
      } else await sleep(50);
    }
    if (ready) {
      const token = writeOwner(ownerFile, false);
      logger.info(`embedded Redis listening on 127.0.0.1:${port}`);
      return attach(child.pid!, port, true, token, child, exitedPromise);
    }
    if (!opts.port && attempt < 5 && /address already in use/i.test(tail.text())) {
      logger.debug(`embedded redis: port ${port} taken meanwhile, trying another`);
      continue;
    }
    throw new Error(`redis-server exited during start: ${tail.text()}`);
  }

  function attach(pid: number, at: number, started: boolean, token?: string, own?: ChildProcess, ownExit?: Promise<void>): EmbeddedRedis {
    if (!started && shouldTakeOver(ownerFile, false)) token = writeOwner(ownerFile, false);
    if (ownedBy(ownerFile, token)) spawnWatchdog(pid, 'TERM', ownerFile);
    let stopped = false;
    return {
      url: `redis://:${encodeURIComponent(password)}@127.0.0.1:${at}`,
      port: at,
      started,
      async stop() {
        if (stopped) return;
        stopped = true;
        // SIGTERM: Redis flushes the AOF and exits.
        await stopOwnedChild({ name: 'Redis', pid, ownerFile, token, own, ownExit, signal: 'SIGTERM', hardSignal: 'SIGKILL', graceMs: 15_000, logger });
      },
    };
  }
}
