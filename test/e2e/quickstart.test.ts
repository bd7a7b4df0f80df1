/**
 * The README's quick start, executed command by command: its code blocks are read from README.md at run time, so
 * a change that breaks a step (a CLI flag, a field name, the demo catalog, a route) fails here.
 *
 * What differs from a user's shell, and why: `npm install` is not re-run (this checkout is installed: the suite
 * runs from it); `localhost:3000` becomes a free port; the service gets this file's own database, Redis queue
 * prefix, home directory and demo-provider port; `npm start`'s prestart build is done once up front with the
 * TypeScript compiler alone (npm then runs `start` without its pre-script), because the full build also
 * regenerates the Prisma client that other test files are loading at the same time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitFor } from '../helpers/until';
import { settlesWithin } from '../../shared/runtime/process-utils';

const ROOT = path.join(__dirname, '..', '..');
const run = promisify(execFile);

interface Block {
  lang: string;
  code: string;
}

/** The fenced code blocks of the README's "## Quick start" section. */
export function quickStartBlocks(readme: string): Block[] {
  const start = readme.indexOf('\n## Quick start\n');
  if (start < 0) throw new Error('README.md has no "## Quick start" section');
  const next = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], code: m[2] }));
}

/** Shell lines, with `\` continuations joined. */
function shellCommands(code: string): string[] {
  return code
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

/** The command without its trailing comment (two spaces or more, then `#`). */
const withoutComment = (line: string) => line.replace(/\s{2,}#.*$/, '').trim();

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

let t: TestDb;
let home: string;
let service: ChildProcess | undefined;
let serviceLog = '';

beforeAll(async () => {
  t = await createTestDb();
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-quickstart-'));
});
afterAll(async () => {
  if (service?.pid && service.exitCode === null) {
    const exited = new Promise((resolve) => service!.once('exit', resolve));
    process.kill(-service.pid, 'SIGTERM'); // its own process group: npm, and the node it started
    if (!(await settlesWithin(exited, 10_000)) && service.exitCode === null) process.kill(-service.pid, 'SIGKILL');
  }
  service?.stdout?.destroy();
  service?.stderr?.destroy();
  await t.drop();
  fs.rmSync(home, { recursive: true, force: true });
});

describe('README quick start', () => {
  it('runs as written: start in demo mode, create an organization and a key, one call with curl, one with the openai SDK', async () => {
    const blocks = quickStartBlocks(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    expect(blocks.map((b) => b.lang)).toEqual(['bash', 'js', 'python']);

    const [port, demoPort] = [await freePort(), await freePort()];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: t.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `{sy_qs_${randomBytes(4).toString('hex')}}`,
      SWITCHYARD_HOME: home,
      DEMO_PROVIDER_PORT: String(demoPort),
      LOG_LEVEL: 'warn',
      npm_config_ignore_scripts: 'true', // `npm start` without prestart: the build is done below
    };
    delete env.SWITCHYARD_DEMO;
    delete env.PORT;
    const local = (s: string) => s.replace(/localhost:3000/g, `localhost:${port}`);
    const vars: Record<string, string> = {};
    const fill = (s: string) =>
      s.replace(/<([A-Za-z]+)>/g, (_m, name: string) => {
        if (vars[name] === undefined) throw new Error(`the quick start uses <${name}> before any command printed it`);
        return vars[name];
      });

    // npm start's prestart, minus the Prisma generate that npm install already did.
    const tsc = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
    expect({ status: tsc.status, out: tsc.stdout + tsc.stderr }).toEqual({ status: 0, out: '' });

    const commands = shellCommands(blocks[0].code);
    expect(withoutComment(commands[0])).toBe('npm install');
    const ran: string[] = [];
    for (const line of commands.slice(1)) {
      const cmd = local(fill(withoutComment(line)));
      ran.push(cmd.split(' ').slice(0, 4).join(' '));
      const exported = /^export (\w+)=(\S+)$/.exec(cmd);
      if (exported) {
        env[exported[1]] = exported[2];
        continue;
      }
      if (cmd.endsWith('&')) {
        // The service, in the background: wait until it is ready.
        service = spawn('bash', ['-c', cmd.slice(0, -1).trim()], { cwd: ROOT, env: { ...env, PORT: String(port) }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        service.stdout!.on('data', (d) => (serviceLog += d));
        service.stderr!.on('data', (d) => (serviceLog += d));
        const started = service;
        await waitFor(
          `\`${cmd}\` to be ready`,
          async () => {
            if (started.exitCode !== null) throw new Error(`\`${cmd}\` exited with ${started.exitCode}:\n${serviceLog}`);
            return new Promise<boolean>((resolve) =>
              http.get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (r) => resolve(r.resume().statusCode === 200)).on('error', () => resolve(false)),
            );
          },
          90_000,
          250,
        ).catch((e: Error) => {
          throw new Error(`${e.message}:\n${serviceLog}`);
        });
        continue;
      }
      const { stdout } = await run('bash', ['-c', cmd], { cwd: ROOT, env, timeout: 60_000 }).catch((e: { stderr?: string; message: string }) => {
        throw new Error(`\`${cmd}\` failed: ${e.stderr || e.message}`);
      });
      const out = JSON.parse(stdout) as Record<string, unknown>;
      for (const [k, v] of Object.entries(out)) if (typeof v === 'string') vars[k] = v;
      if (cmd.startsWith('curl')) {
        expect(out).toMatchObject({ object: 'response', status: 'completed', model: 'openai/gpt-4.1-mini' });
        expect(String(out.output_text ?? '').length).toBeGreaterThan(0);
      }
    }
    expect(ran.filter((c) => c.startsWith('npm run -s cli'))).toHaveLength(2);
    expect(ran.some((c) => c.startsWith('curl'))).toBe(true);
    expect(vars.key).toMatch(/^sy_/);

    // The Node block, as `node hello.mjs` from this checkout (so `openai` resolves from its node_modules).
    const node = await run(process.execPath, ['--input-type=module', '-e', local(blocks[1].code)], { cwd: ROOT, env, timeout: 60_000 });
    expect(node.stdout.trim().length).toBeGreaterThan(0);

    // The Python block, where the machine has the openai package (CI's may not: then it is said, not hidden).
    if (spawnSync('python3', ['-c', 'import openai'], { stdio: 'ignore' }).status === 0) {
      const py = await run('python3', ['-c', local(blocks[2].code)], { cwd: ROOT, env, timeout: 60_000 });
      expect(py.stdout.trim().length).toBeGreaterThan(0);
    } else console.warn('README quick start: the Python block was not run (python3 has no openai package)');
  }, 240_000);
});
