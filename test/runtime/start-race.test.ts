/**
 * The quick start pasted whole: `npm start &` and a `switchyard` command at once, while the service starts the embedded
 * PostgreSQL for the first time. The race is made certain, not left to luck: the service's initdb is a wrapper
 * (SWITCHYARD_PG_BIN) that says when it runs and waits for the test's word before it does anything, so the command
 * starts while the service provably holds a cluster that does not exist yet.
 *
 * Before the start lock (shared/runtime/start-lock.ts) the command initialised the same cluster a second time (a second
 * initdb, its own password over the service's), or created the same database in the same instant (the service died:
 * "duplicate key value violates unique constraint pg_database_datname_index"), while the command exited 0.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { postgresBinDir } from '../../shared/runtime/embedded-postgres';
import { readRuntimeInfo } from '../../shared/runtime/runtime-file';
import { readOwner } from '../../shared/runtime/process-utils';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { runProcess } from '../helpers/run-process';

jest.setTimeout(120_000);

const ROOT = path.join(__dirname, '..', '..');

/** Resolves with the first line of `stream` matching `re`, or rejects when the process exits first. */
function lineOf(child: ChildProcess, stream: 'stdout' | 'stderr', re: RegExp, seen: { text: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const hit = seen.text.split('\n').find((l) => re.test(l));
      if (hit !== undefined) {
        child[stream]!.off('data', look);
        child.off('exit', gone);
        resolve(hit);
      }
    };
    const gone = (code: number | null) => reject(new Error(`exited (${code}) before printing ${re}:\n${seen.text}`));
    child[stream]!.on('data', look);
    child.once('exit', gone);
    look();
  });
}

let dir: string;
let gate: { started: string; go: string };
let service: ChildProcess | undefined;
let cliProcess: ChildProcess | undefined;
let reader: fs.ReadStream | undefined;

/** Wakes a read pending on the `started` fifo (a stream cannot be closed while its read waits), if a reader is there. */
function wakeReader(): void {
  try {
    const fd = fs.openSync(gate.started, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    fs.writeSync(fd, '\n');
    fs.closeSync(fd);
  } catch {
    // no reader
  }
}

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-start-race-'));
  fs.chmodSync(dir, 0o755); // as root, PostgreSQL runs as the postgres user and must reach the cluster and the gate
  // The binaries of the installed package, but initdb says when it starts (a line into `started`) and waits for a line
  // from `go` before it runs.
  const real = postgresBinDir();
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { mode: 0o755 });
  for (const f of fs.readdirSync(real)) if (f !== 'initdb') fs.symlinkSync(path.join(real, f), path.join(bin, f));
  gate = { started: path.join(dir, 'initdb-started'), go: path.join(dir, 'initdb-go') };
  for (const fifo of Object.values(gate)) expect(spawnSync('mkfifo', ['-m', '666', fifo]).status).toBe(0);
  fs.writeFileSync(path.join(bin, 'initdb'), `#!/bin/sh\necho "$$" > '${gate.started}'\nread go < '${gate.go}'\nexec '${path.join(real, 'initdb')}' "$@"\n`, { mode: 0o755 });
});
afterAll(async () => {
  // A failed run may have left initdbs at the gate: open it, then stop what is still running.
  try {
    const fd = fs.openSync(gate.go, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    fs.writeSync(fd, 'go\ngo\n');
    fs.closeSync(fd);
  } catch {
    // nobody waits there
  }
  for (const p of [cliProcess, service]) {
    if (!p || p.exitCode !== null || p.signalCode !== null) continue;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    await exited;
  }
  reader?.destroy();
  wakeReader();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('a switchyard command run during the service\'s first start waits for it, uses its database, and the service lives on', async () => {
  const home = path.join(dir, 'home');
  const env: NodeJS.ProcessEnv = { ...process.env, SWITCHYARD_HOME: home, SWITCHYARD_PG_BIN: path.join(dir, 'bin'), REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  delete env.SWITCHYARD_DEMO;

  // Every initdb that starts writes its pid into the fifo: kept open for reading and writing, it never reads an end.
  const initdbs: string[] = [];
  const startedReader = fs.createReadStream(gate.started, { flags: 'r+', encoding: 'utf8' });
  reader = startedReader;
  const initdbsStarted = (n: number) =>
    new Promise<void>((resolve) => {
      const look = () => initdbs.length >= n && (startedReader.off('data', look), resolve());
      startedReader.on('data', look);
      look();
    });
  startedReader.on('data', (chunk) => initdbs.push(...String(chunk).split('\n').filter(Boolean)));
  const initdbStarted = initdbsStarted(1);

  // npm start's process, from the sources (the CLI runs from them too).
  const log = { text: '' };
  service = spawn(process.execPath, ['-e', `require(${JSON.stringify(path.join(ROOT, 'bin', 'ts-register.js'))}).register(); require(${JSON.stringify(path.join(ROOT, 'bin', 'start.ts'))});`], {
    cwd: ROOT,
    // Port 0: the kernel's free port when the service listens, seconds from now (a port found free here could be
    // taken by then: EADDRINUSE).
    env: { ...env, PORT: '0', WEB_CONCURRENCY: '1', QUEUE_PREFIX: `{sy_race_${randomBytes(4).toString('hex')}}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  service.stdout!.on('data', (d) => (log.text += d));
  service.stderr!.on('data', (d) => (log.text += d));
  await initdbStarted; // the service is in its first start: it initialises the cluster, held at the gate
  expect(initdbs).toHaveLength(1);

  // The quick start's next line, at once.
  const cli = spawn(process.execPath, [path.join(ROOT, 'bin', 'switchyard.js'), 'org', 'create', '--name', 'Acme', '--balance', '100', '--json'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = { text: '' };
  const err = { text: '' };
  cli.stdout!.on('data', (d) => (out.text += d));
  cli.stderr!.on('data', (d) => (err.text += d));
  const cliExit = new Promise<number | null>((r) => cli.once('exit', (code) => r(code)));
  cliProcess = cli;
  // It says it waits for the service, and starts no initdb of its own.
  const secondInitdb = initdbsStarted(2).then(() => {
    throw new Error(`the command started an initdb of its own on the service's cluster:\n${err.text}`);
  });
  const waiting = await Promise.race([lineOf(cli, 'stderr', /waiting/, err), secondInitdb]);
  expect(waiting).toBe(`switchyard warn: the embedded PostgreSQL in ${path.join(home, 'pg')} is being started or stopped by the service (pid ${service.pid}): waiting for it`);
  expect(initdbs).toHaveLength(1);

  // The service's initdb goes on; both finish.
  fs.writeFileSync(gate.go, 'go\n');
  await lineOf(service, 'stdout', /Switchyard API listening/, log);
  expect(await cliExit).toBe(0);
  expect(initdbs).toHaveLength(1);
  const created = JSON.parse(out.text) as { organizationId: string };

  // One cluster, one server, the service's: the organization is in the database the service serves, and the service
  // (not the command) is the server's owner.
  const info = readRuntimeInfo(home)!;
  expect(info.pid).toBe(service.pid);
  const c = new Client({ connectionString: info.databaseUrl });
  await c.connect();
  try {
    expect((await c.query('SELECT name, balance::text FROM organizations WHERE id = $1', [created.organizationId])).rows).toEqual([{ name: 'Acme', balance: expect.stringMatching(/^100(\.0+)?$/) }]);
  } finally {
    await c.end();
  }
  expect(readOwner(path.join(home, 'pg', 'owner'))).toMatchObject({ pid: service.pid, transient: false });
  expect(service.exitCode).toBeNull();
  const r = await runProcess(process.execPath, [path.join(ROOT, 'bin', 'switchyard.js'), 'org', 'topup', '--org', created.organizationId, '--amount', '1', '--json'], { cwd: ROOT, env });
  expect(r).toMatchObject({ code: 0, stderr: '' });

  // It stops cleanly, and its PostgreSQL with it.
  const stopped = new Promise<number | null>((resolve) => service!.once('exit', (code) => resolve(code)));
  service.kill('SIGTERM');
  expect(await stopped).toBe(0);
  expect(fs.existsSync(path.join(home, 'pg', 'data', 'postmaster.pid'))).toBe(false);
});
