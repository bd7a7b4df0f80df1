/**
 * The README's quick start, run as pasted: its code blocks are read from README.md at run time, the shell block runs
 * whole in one bash (`npm start -- --demo &` and the CLI at once, the identifiers in shell variables), then the Node and
 * Python blocks with the key it exported, so a change that breaks a step (a CLI flag, a field name, the demo catalog, a
 * route) fails here. The service runs as a newcomer's does: no DATABASE_URL or REDIS_URL, so `npm start` starts the
 * embedded PostgreSQL and redis-server, and the CLI runs while it starts (which of the two starts PostgreSQL is the
 * machine's timing: test/runtime/start-race.test.ts makes the race certain).
 *
 * What differs from a user's shell, and why: `npm install` is not re-run (this checkout is installed: the suite runs
 * from it); `localhost:3000` becomes a free port (PORT) and the fake providers get one too (DEMO_PROVIDER_PORT); the
 * home directory is this file's own (SWITCHYARD_HOME); `npm start`'s prestart build is done once up front with the
 * TypeScript compiler alone (npm then runs `start` without its pre-script), because a full build also regenerates the
 * Prisma client that other test files are loading at the same time; the Python block runs in the tests' virtualenv
 * (test/helpers/python-venv.ts: `openai` from the machine's wheel mirror), its `pip install openai`.
 *
 * Then every request example of the API reference that costs money is sent with the quick start's key: the balance it
 * gives must cover each (a video's reservation did not fit the 100 RUB the quick start gave before: 402).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { EXAMPLES } from '../../api/openapi/build-openapi';
import { readRuntimeInfo } from '../../shared/runtime/runtime-file';
import { isAlive } from '../../shared/runtime/process-utils';
import { pythonVenv } from '../helpers/python-venv';
import { waitFor } from '../helpers/until';
import { portBelowEphemeral } from '../helpers/port-below-ephemeral';

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

/** The operations of the API reference whose examples make a generation (and so reserve money). */
const PAID_EXAMPLES = ['POST /v1/responses', 'POST /v1/chat/completions', 'POST /v1/embeddings', 'POST /v1/systemone', 'POST /v1/images/generations', 'POST /v2/images/generations', 'POST /v1/media'];

const venv = pythonVenv();

let dir: string;
let shell: ChildProcess | undefined;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-quickstart-'));
  fs.chmodSync(dir, 0o755); // as root, the embedded PostgreSQL runs as the postgres user and must reach its cluster
});
afterAll(async () => {
  // The shell is gone; `npm start` and the node it started are in its process group. Stop them and wait for the
  // service (it stops its PostgreSQL and Redis) before removing its home.
  const service = readRuntimeInfo(path.join(dir, 'home'));
  if (shell?.pid) {
    try {
      process.kill(-shell.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  if (service) await waitFor('the service to stop', () => !isAlive(service.pid), 30_000, 100).catch(() => undefined);
  shell?.stdout?.destroy();
  shell?.stderr?.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
}, 40_000);

describe('README quick start', () => {
  it('runs as pasted: the shell block whole (start, organization, key, a call), then the Node and Python blocks; its balance covers every paid example of the API reference', async () => {
    const blocks = quickStartBlocks(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    expect(blocks.map((b) => b.lang)).toEqual(['bash', 'js', 'python']);

    const [port, demoPort] = [await portBelowEphemeral(), await portBelowEphemeral()];
    const local = (s: string) => s.replace(/localhost:3000/g, `localhost:${port}`);
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), DEMO_PROVIDER_PORT: String(demoPort), SWITCHYARD_HOME: path.join(dir, 'home'), LOG_LEVEL: 'warn' };
    for (const name of ['DATABASE_URL', 'DIRECT_DATABASE_URL', 'REDIS_URL', 'SWITCHYARD_DEMO', 'SWITCHYARD_API_KEY', 'QUEUE_PREFIX']) delete env[name];
    env.npm_config_ignore_scripts = 'true'; // `npm start` without prestart: the build is done here

    // npm start's prestart, minus the Prisma generate that npm install already did.
    const tsc = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: ROOT, encoding: 'utf8' });
    expect({ status: tsc.status, out: tsc.stdout + tsc.stderr }).toEqual({ status: 0, out: '' });

    // The shell block as pasted, but for `npm install`; then what it kept, for the other blocks.
    const [first, ...rest] = blocks[0].code.split('\n');
    expect(first).toBe('npm install');
    const kept = path.join(dir, 'kept');
    const script = `${local(rest.join('\n'))}\necho\nprintf '%s\\n' "$SWITCHYARD_API_KEY" "$WEBHOOK_SECRET" > '${kept}'\n`;
    shell = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    shell.stdout!.on('data', (d) => (out += d));
    shell.stderr!.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => shell!.once('exit', (c) => resolve(c)));
    expect({ code, err: code === 0 ? '' : err }).toEqual({ code: 0, err: '' });

    // The call's answer (the service's own log lines share the shell's output).
    const answer = out
      .split('\n')
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return undefined;
        }
      })
      .find((o) => o?.object === 'response');
    expect(answer).toMatchObject({ object: 'response', status: 'completed', model: 'openai/gpt-4.1-mini' });
    expect(String(answer!.output_text ?? '').length).toBeGreaterThan(0);
    const [key, webhookSecret] = fs.readFileSync(kept, 'utf8').split('\n');
    expect(key).toMatch(/^sy_/);
    expect(webhookSecret).toMatch(/^whsec_/);
    expect(err).not.toMatch(/error/i);

    const withKey = { ...env, SWITCHYARD_API_KEY: key };
    // The Node block, as `node hello.mjs` from this checkout (so `openai` resolves from its node_modules).
    const node = await run(process.execPath, ['--input-type=module', '-e', local(blocks[1].code)], { cwd: ROOT, env: withKey, timeout: 60_000 });
    expect(node.stdout.trim().length).toBeGreaterThan(0);

    // The Python block, with the openai package of the tests' virtualenv.
    if (venv.ok) {
      const py = await run(venv.python, ['-c', local(blocks[2].code)], { cwd: ROOT, env: withKey, timeout: 60_000 });
      expect(py.stdout.trim().length).toBeGreaterThan(0);
    } else console.warn(`README quick start: the Python block was not run: ${venv.reason}`);

    // Every paid example of the API reference fits the quick start's balance.
    const statuses: Record<string, number> = {};
    for (const op of PAID_EXAMPLES) {
      const [method, route] = op.split(' ');
      const res = await fetch(`http://localhost:${port}${route}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(EXAMPLES[op].request) });
      statuses[op] = res.status;
      await res.arrayBuffer();
    }
    expect(statuses).toEqual(Object.fromEntries(PAID_EXAMPLES.map((op) => [op, op === 'POST /v1/media' ? 202 : 200])));
  }, 240_000);
});
