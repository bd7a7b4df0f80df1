/**
 * Demo mode under npm start's cluster (`npm start -- --demo` with WEB_CONCURRENCY=2; docs/demo.md): one set of fake
 * providers, the parent's, for both processes, so the failure knobs set with `POST /_fake/knobs` apply to every call and
 * a provider batch created from one process is found by the other; and a small batch answers in seconds (the demo polls
 * the fake's batch API every second, not every 15).
 *
 * Before, each process started its own fake providers on the shared port: the knobs reached one set (half the calls),
 * and a batch polled through the other set was not found (its lines fell back to direct calls).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { batchEnded, batchUntil, jsonl } from '../helpers/openai-batches';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { runProcess } from '../helpers/run-process';
import { portBelowEphemeral } from '../helpers/port-below-ephemeral';

jest.setTimeout(120_000);

const ROOT = path.join(__dirname, '..', '..');

let t: TestDb;
let dir: string;
let service: ChildProcess | undefined;
const log = { text: '' };

beforeAll(async () => {
  t = await createTestDb();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-demo-'));
});
afterAll(async () => {
  if (service && service.exitCode === null && service.signalCode === null) {
    const exited = new Promise((r) => service!.once('exit', r));
    service.kill('SIGTERM');
    await exited;
  }
  await t.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Resolves once the service printed a line matching `re`; rejects if it exits first. */
function printed(re: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    const look = () => re.test(log.text) && (service!.stdout!.off('data', look), service!.off('exit', gone), resolve());
    const gone = (code: number | null) => reject(new Error(`npm start exited (${code}) before printing ${re}:\n${log.text}`));
    service!.stdout!.on('data', look);
    service!.once('exit', gone);
    look();
  });
}

it('runs one set of fake providers for both processes: the knobs apply to every call, and a small batch is answered through the provider batch API', async () => {
  const [port, demoPort] = [await portBelowEphemeral(), await portBelowEphemeral()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: t.url,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: `{sy_demo_${randomBytes(4).toString('hex')}}`,
    SWITCHYARD_HOME: path.join(dir, 'home'),
    DEMO_PROVIDER_PORT: String(demoPort),
    LOG_LEVEL: 'info',
  };
  delete env.SWITCHYARD_DEMO;
  // npm start from the sources: the processes node:cluster forks run this same file.
  const entry = path.join(dir, 'start.js');
  fs.writeFileSync(entry, `require(${JSON.stringify(path.join(ROOT, 'bin', 'ts-register.js'))}).register();\nrequire(${JSON.stringify(path.join(ROOT, 'bin', 'start.ts'))});\n`);
  service = spawn(process.execPath, [entry, '--demo'], { cwd: ROOT, env: { ...env, PORT: String(port), WEB_CONCURRENCY: '2' }, stdio: ['ignore', 'pipe', 'pipe'] });
  service.stdout!.on('data', (d) => (log.text += d));
  service.stderr!.on('data', (d) => (log.text += d));
  await printed(/2 processes serve the API and the workers/);

  // One set of fakes, started once (by the parent), for the two processes.
  expect(log.text.match(/demo mode: fake providers on/g)).toHaveLength(1);

  const cli = async (args: string[]) => {
    const r = await runProcess(process.execPath, [path.join(ROOT, 'bin', 'switchyard.js'), ...args, '--json'], { cwd: ROOT, env });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(r.stdout) as Record<string, string>;
  };
  const org = await cli(['org', 'create', '--name', 'Demo', '--balance', '100']);
  const { key } = await cli(['key', 'create', '--org', org.organizationId]);
  // `spread` opens a fresh connection per call (no keep-alive), so its calls reach both processes.
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0 });
  const fresh = new Agent({ pipelining: 0 }); // undici: no keep-alive
  const spread = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, maxRetries: 0, fetch: ((url: string, init: object) => undiciFetch(url, { ...init, dispatcher: fresh })) as unknown as typeof fetch });

  // The knobs (docs/demo.md) replace the fakes' set: every call answers with the knob's text, whichever process made it.
  const fakes = `http://127.0.0.1:${demoPort}`;
  expect((await fetch(`${fakes}/_fake/knobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'set by the knob' }) })).status).toBe(200);
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => spread.chat.completions.create({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: `call ${i}` }] })));
  expect(answers.map((a) => a.choices[0].message.content)).toEqual(Array(8).fill('set by the knob'));
  const calls = (await (await fetch(`${fakes}/_fake/requests`)).json()) as Array<{ path: string }>;
  expect(calls.filter((r) => r.path === '/openai/v1/chat/completions')).toHaveLength(8);

  // A three-line batch goes to the provider's batch API (the demo catalog has batch prices) and is answered from it.
  const lines = [0, 1, 2].map((i) => ({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: `line ${i}` }] } }));
  const file = await client.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'input.jsonl'), purpose: 'batch' });
  const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  const batch = await batchUntil(client, created.id, batchEnded, 60_000);
  expect(batch).toMatchObject({ status: 'completed', request_counts: { total: 3, completed: 3, failed: 0 } });
  const out = (await (await client.files.content(batch.output_file_id!)).text()).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { response: { body: { choices: Array<{ message: { content: string } }> } } });
  expect(out.map((l) => l.response.body.choices[0].message.content)).toEqual(Array(3).fill('set by the knob'));
  // One upstream batch ran the three lines; none fell back to a direct call.
  expect(await (await fetch(`${fakes}/_fake/batches`)).json()).toMatchObject({ created: 1, linesRun: 3 });
  const after = (await (await fetch(`${fakes}/_fake/requests`)).json()) as Array<{ path: string }>;
  expect(after.filter((r) => r.path === '/openai/v1/chat/completions')).toHaveLength(8);

  await fresh.close();
  const stopped = new Promise<number | null>((resolve) => service!.once('exit', (code) => resolve(code)));
  service.kill('SIGTERM');
  expect(await stopped).toBe(0);
});
