/**
 * The request walks (docs/architecture.md "Two walks"): which of Switchyard's own files and functions one request
 * runs, counted by V8's precise coverage in a process that serves the API and the workers (as `npm start` does), in
 * demo mode (its fake providers, its catalog). After warm-up requests (so leases and caches are as in steady state),
 * the counters are reset and one request of each kind is sent: a synchronous chat completion, then a streamed
 * response. A function counts when it ran during that request (start-up and timers between requests are reset away;
 * the fake providers, which demo mode runs in the same process, and everything in node_modules are left out).
 *
 *   npm run -s build && DATABASE_URL=postgresql://postgres@127.0.0.1:5432/<db> REDIS_URL=redis://127.0.0.1:6379 \
 *     QUEUE_PREFIX=walk node dist/bench/walk.js [--list] [--repeat N] [--json]
 *
 * The database must be migrated (`npm run db:migrate` with the same DATABASE_URL). `--list` prints the files and
 * functions of each walk. `--repeat N` sends each request N times and reports the fewest files and functions: what
 * else the process happens to run meanwhile (a lease renewal's timer, a key cache refilled on a busy machine) only
 * adds. `--json` ends with one line, `{"<walk>": {"files": n, "functions": n}, ...}`: test/runtime/walk.test.ts
 * compares it with the committed bench/walks.json.
 */
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { Client } from 'pg';
import { bootstrap } from '../shared/runtime/bootstrap';
import { startWorkers } from '../workers/main';
import { startWeb } from '../api/main';
import { AccountsService } from '../shared/services/accounts.service';

const ROOT = path.resolve(__dirname, '..');
const MODEL = 'openai/gpt-4.1-mini';

interface Walk {
  files: Map<string, string[]>;
}

async function main(): Promise<void> {
  const list = process.argv.includes('--list');
  const json = process.argv.includes('--json');
  const repeat = Math.max(1, Number(process.argv[process.argv.indexOf('--repeat') + 1]) || 1);
  const rt = await bootstrap('all');
  const pool = await startWorkers(rt);
  const web = await startWeb(rt);
  const accounts = new AccountsService(rt.db, rt.secret);
  const org = await accounts.createOrganization({ name: 'walk', balance: '100000' });
  const { key } = await accounts.createKey({ organizationId: org.organizationId, name: 'walk' });
  const url = `http://127.0.0.1:${web.port}`;
  const post = async (p: string, body: object) => {
    const res = await fetch(`${url}${p}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${p}: ${res.status} ${text}`);
    return text;
  };
  const chat = () => post('/v1/chat/completions', { model: MODEL, messages: [{ role: 'user', content: 'walk' }], max_tokens: 16 });
  const stream = () => post('/v1/responses', { model: MODEL, input: 'walk', max_output_tokens: 16, stream: true });

  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  const take = async (): Promise<Walk> => {
    const { result } = (await session.post('Profiler.takePreciseCoverage')) as { result: Array<{ url: string; functions: Array<{ functionName: string; ranges: Array<{ count: number }> }> }> };
    const files = new Map<string, string[]>();
    for (const script of result) {
      if (!script.url.startsWith('file://')) continue;
      const file = path.relative(ROOT, new URL(script.url).pathname).replace(/^dist\//, '');
      if (file.startsWith('..') || file.includes('node_modules') || file.startsWith('test/') || file.startsWith('bench/') || file.startsWith('fakes/')) continue;
      const ran = script.functions.filter((f) => f.ranges[0]!.count > 0 && f.functionName !== '').map((f) => f.functionName);
      if (ran.length) files.set(file, ran);
    }
    return { files };
  };
  // The settlement commits after the reply: every request sent so far has a final record, read through a connection of
  // the bench's own (node_modules' code, which the walk leaves out).
  const watcher = new Client({ connectionString: rt.config.databaseUrl });
  await watcher.connect();
  let sent = 0;
  const settled = async () => {
    for (;;) {
      const { rows } = await watcher.query<{ n: number }>("SELECT count(*)::int AS n FROM generations WHERE organization_id = $1 AND status NOT IN ('pending', 'processing')", [org.organizationId]);
      if (rows[0]!.n >= sent) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const counted = (send: () => Promise<string>) => () => (sent++, send());
  for (let i = 0; i < 40; i++) await counted(chat)();
  for (let i = 0; i < 20; i++) await counted(stream)();
  await settled();
  await new Promise((r) => setTimeout(r, 300));

  const walks: Array<[string, () => Promise<unknown>]> = [
    ['sync chat completion', counted(chat)],
    ['streamed response', counted(stream)],
  ];
  const figures: Record<string, { files: number; functions: number }> = {};
  for (const [name, send] of walks) {
    let fewest: { walk: Walk; functions: number } | undefined;
    for (let i = 0; i < repeat; i++) {
      // The key's cache entry (1 s) just read, as in steady traffic, however slow the machine is.
      const warm = await fetch(`${url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      if (warm.status !== 200) throw new Error(`/v1/models: ${warm.status}`);
      await warm.arrayBuffer();
      await take(); // resets the counters
      await send();
      await settled();
      // After the commit the job still ends (its slot, its metrics) and the request's timers fire (the endpoint stats'
      // flush, 200 ms after its sample): no signal outside our own code says when.
      await new Promise((r) => setTimeout(r, 300));
      const walk = await take();
      const functions = [...walk.files.values()].reduce((n, f) => n + new Set(f).size, 0);
      if (!fewest || functions < fewest.functions || (functions === fewest.functions && walk.files.size < fewest.walk.files.size)) fewest = { walk, functions };
    }
    const { walk, functions } = fewest!;
    figures[name] = { files: walk.files.size, functions };
    console.log(`${name}: ${walk.files.size} files, ${functions} named functions`);
    if (list) for (const [file, fns] of [...walk.files].sort()) console.log(`  ${file}: ${[...new Set(fns)].join(', ')}`);
  }
  if (json) console.log(JSON.stringify(figures));
  await watcher.end();
  await session.post('Profiler.stopPreciseCoverage');
  session.disconnect();
  await web.close();
  await pool.close();
  await rt.close();
}

main().catch((e: Error) => {
  console.error(e);
  process.exit(1);
});
