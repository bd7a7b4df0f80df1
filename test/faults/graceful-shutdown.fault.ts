/**
 * Case 9. SIGTERM with work in flight.
 *   API: requests already received complete; new connections are refused; the process exits 0.
 *   Worker: active jobs finish before it exits 0; a worker whose jobs outlast its shutdown deadline exits
 *   anyway and its jobs are handed back (stalled → re-run by another worker). Nothing charged twice or lost.
 */
import fs from 'node:fs';
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster } from './helpers/cluster';
import { post, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { listensOn } from './helpers/processes';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'graceful', env: { SYNC_WAIT_MS: '30000' } });
});
afterAll(async () => {
  await c?.close();
});

test('SIGTERM: the API finishes in-flight requests and refuses new ones; workers finish or hand back their jobs', async () => {
  const checks = new Checks('9. graceful shutdown', 'SIGTERM to the API with 8 requests in flight; SIGTERM to a worker with 8 active jobs (held by the provider until its shutdown began); SIGTERM to a worker whose 6 jobs (held) outlast its 1 s shutdown deadline');
  const tally = new Tally();
  const api1 = await c.startApi();
  // LOG_LEVEL info: it says when its shutdown begins.
  await c.startWorker({ LOG_LEVEL: 'info' });
  await c.warmUp(api1);
  const org = await c.seed({ balance: '100' });
  const body = (i: number) => ({ model: MODELS.chat, input: `shutdown ${i}`, max_output_tokens: 32 });

  // Each step's calls are held inside the provider until its SIGTERM has taken effect.
  const calls = () => c.fake.requests.filter((r) => r.method === 'POST').length;
  const atProvider = (what: string, n: number, since: number) => waitFor(what, async () => (await c.queues.text.getActiveCount()) >= n && calls() >= since + n);

  // 1. The API.
  c.fake.setKnobs({ holdReplies: true });
  let since = calls();
  const inFlight = Array.from({ length: 8 }, (_, i) => post(`${api1.url}/v1/responses`, body(i), org.auth));
  await atProvider('requests in flight', 8, since);
  api1.kill('SIGTERM');
  // Its listening socket closed (it takes no new connection), the requests in flight still running.
  await waitFor('the API to stop listening', async () => !listensOn(api1.pid, api1.port));
  const refused = await Promise.all(Array.from({ length: 3 }, (_, i) => post(`${api1.url}/v1/responses`, body(100 + i), org.auth, 5000)));
  // Lets go of step 1's calls, and holds step 2's.
  c.fake.setKnobs({ holdReplies: true });
  const served = await Promise.all(inFlight);
  const apiExit = await api1.exited;
  tally.addAll([...served, ...refused]);
  checks.that(served.every((r) => r.status === 200), `in-flight requests during API shutdown: ${served.map((r) => r.status).join(',')}`);
  checks.that(refused.every((r) => r.status === 0), `new requests after SIGTERM: ${refused.map((r) => `${r.status} ${r.error ?? ''}`).join(',')}`);
  checks.that(apiExit.code === 0, `API exit ${JSON.stringify(apiExit)}`);

  // 2. A worker with active jobs that fit in its shutdown deadline: they finish, then it exits 0.
  const api2 = await c.startApi();
  const [w1] = c.procs.filter((p) => p.role === 'worker');
  since = calls();
  const jobs = Array.from({ length: 8 }, (_, i) => post(`${api2.url}/v1/responses`, body(200 + i), org.auth));
  await atProvider('jobs active', 8, since);
  const logged = fs.readFileSync(w1.log, 'utf8').length;
  w1.kill('SIGTERM');
  await waitFor('the worker to begin its shutdown', async () => fs.readFileSync(w1.log, 'utf8').slice(logged).includes('SIGTERM: shutting down gracefully'));
  // Sent while the only worker shuts down: they wait in the queue for the next worker.
  const queued = Array.from({ length: 4 }, (_, i) => post(`${api2.url}/v1/responses`, body(300 + i), org.auth));
  c.fake.setKnobs({});
  const w1Exit = await w1.exited;
  const finishedByW1 = await Promise.all(jobs);
  checks.that(w1Exit.code === 0, `worker exit ${JSON.stringify(w1Exit)}`);
  checks.that(finishedByW1.every((r) => r.status === 200), `jobs active at the worker's SIGTERM: ${finishedByW1.map((r) => r.status).join(',')}`);

  // 3. A worker whose jobs outlast its shutdown deadline: it exits, the jobs are handed back and run again.
  const w2 = await c.startWorker({ SHUTDOWN_TIMEOUT_MS: '1000' });
  const queuedReplies = await Promise.all(queued);
  c.fake.setKnobs({ holdReplies: true });
  since = calls();
  const slow = Array.from({ length: 6 }, (_, i) => post(`${api2.url}/v1/responses`, body(400 + i), org.auth));
  await atProvider('slow jobs active', 6, since);
  w2.kill('SIGTERM');
  const w2Exit = await w2.exited;
  c.fake.setKnobs({ latencyMs: 200 });
  await c.startWorker();
  const handedBack = await Promise.all(slow);
  tally.addAll([...finishedByW1, ...queuedReplies, ...handedBack]);
  checks.that(queuedReplies.every((r) => r.status === 200), `requests queued during the shutdown: ${queuedReplies.map((r) => r.status).join(',')}`);
  checks.that(w2Exit.code === 1, `a worker past its deadline exits 1: ${JSON.stringify(w2Exit)}`);
  checks.that(handedBack.every((r) => r.status === 200), `handed-back jobs: ${handedBack.map((r) => r.status).join(',')}`);

  const a = await settledAudit(c.db, 20_000);
  const settlements = await c.db.$queryRawUnsafe<Array<{ n: number }>>(
    `SELECT COUNT(l.id)::int AS n FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id AND l.kind IN ('charge', 'release') GROUP BY g.id`,
  );
  checks.that(settlements.every((s) => s.n === 1), 'each generation settled exactly once');
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `API: ${served.length} in flight answered 200, ${refused.length} new connections refused, exit 0; worker: ${finishedByW1.length} active jobs finished, exit 0, ${queuedReplies.length} queued meanwhile served by the next worker; worker past its 1 s deadline: exit 1, its ${handedBack.length} jobs re-run and answered 200; every generation settled exactly once`,
  });
  if (failures.length) console.error(c.tails(20));
  expect(failures).toEqual([]);
});
