/**
 * Case 13. `npm start` with WEB_CONCURRENCY=2 (bin/start.ts): two processes, each API + workers, share one port.
 * One of them is killed with SIGKILL while requests run; then the parent gets SIGTERM.
 * What must hold: both processes serve; the parent starts a replacement for the killed one and the port keeps
 * answering; every generation ends settled exactly once (a request the killed process held may fail or be
 * re-run by the survivor, never charged twice); SIGTERM stops the parent and both children.
 * Beside it (no fault injected): one scrape of /metrics answers for both processes; while a replacement starts it answers
 * at once for the processes that serve, and a frozen process makes it a 503 rather than a partial sum.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster } from './helpers/cluster';
import { get, post, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { childrenOf, startNpmStart } from './helpers/processes';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'start-cluster' });
});
afterAll(async () => {
  await c?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('13. npm start with WEB_CONCURRENCY=2 serves on both processes, replaces a killed one and stops on SIGTERM', async () => {
  const checks = new Checks('13. npm start on 2 cores', 'WEB_CONCURRENCY=2; one of the two processes SIGKILLed under load; then SIGTERM to the parent');
  const tally = new Tally();
  const { parent, url, tail, kill, stop } = await startNpmStart(c, 2);
  try {
    const first = childrenOf(parent.pid!);
    checks.that(first.length === 2, `expected 2 processes under the parent, saw ${first.length}`);

    const org = await c.seed({ balance: '100' });
    const ask = (i: number) => post(`${url}/v1/responses`, { model: MODELS.chat, input: `cluster ${i}`, max_output_tokens: 32 }, org.auth);
    const before = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(i)));
    tally.addAll(before);
    checks.that(before.every((r) => r.status === 200), `before the kill: ${before.map((r) => r.status).join(',')}`);

    // Kill one process with requests in flight; the parent replaces it.
    c.fake.setKnobs({ latencyMs: 300 });
    const during = Array.from({ length: 12 }, (_, i) => ask(100 + i));
    await sleep(150);
    process.kill(first[0], 'SIGKILL');
    tally.addAll(await Promise.all(during));
    c.fake.setKnobs({ latencyMs: 0 });
    const replaced = Date.now() + 30_000;
    while (childrenOf(parent.pid!).filter((p) => !first.includes(p)).length < 1 || childrenOf(parent.pid!).length < 2) {
      if (Date.now() > replaced) break;
      await sleep(200);
    }
    const second = childrenOf(parent.pid!);
    checks.that(second.length === 2 && !second.includes(first[0]), `after the kill: processes ${second.join(',')} (killed ${first[0]})`);
    await sleep(1000); // the replacement is listening
    const after = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(200 + i)));
    tally.addAll(after);
    checks.that(after.every((r) => r.status === 200), `after the replacement: ${after.map((r) => r.status).join(',')}`);

    // The killed process's own jobs (its API died with it, so nobody waits for them) are re-run by the others once
    // their locks expire (WORKER_LOCK_DURATION_MS): let that happen before everything stops, or they stay active.
    const beforeStop = await settledAudit(c.db, 30_000);
    for (const p of beforeStop.problems) checks.that(false, `before SIGTERM: ${p}`);

    const code = await stop();
    checks.that(code === 0, `parent exit on SIGTERM: ${code}`);
    checks.that(childrenOf(parent.pid!).length === 0 && second.every((p) => !fs.existsSync(`/proc/${p}`)), 'a child outlived the parent');

    const a = await settledAudit(c.db, 30_000);
    const failures = checks.finishAudited(a, {
      requests: tally.total,
      errors: tally.errors(),
      holds: `2 processes served one port; the SIGKILLed one was replaced (${first.join(',')} → ${second.join(',')}); requests after it all 200; every generation settled exactly once; SIGTERM stopped all (exit ${code})`,
    });
    if (failures.length) console.error(tail());
    expect(failures).toEqual([]);
  } finally {
    kill();
  }
});

it('13b. a process that stops and is then SIGKILLed leaves no connection unanswered', async () => {
  // The parent hands each new connection to one process (node:cluster's round robin keeps its copy until that
  // process says it took it): a process frozen, then killed, with a connection on its way left that connection open
  // in the parent and answered by nobody (a client waited 35 s). A frozen process must not be handed connections.
  const checks = new Checks('13b. npm start: a frozen process killed', 'WEB_CONCURRENCY=2; one process SIGSTOPped, 8 new connections, then SIGKILL');
  const { parent, url, tail, kill } = await startNpmStart(c, 2);
  try {
    const [frozen] = childrenOf(parent.pid!);
    process.kill(frozen, 'SIGSTOP');
    const replies = Array.from({ length: 8 }, () => freshGet(`${url}/readyz`, 20_000));
    await sleep(500);
    process.kill(frozen, 'SIGKILL');
    const got = await Promise.all(replies);
    checks.that(got.every((s) => s === 200), `new connections while one process was frozen, then killed: ${got.join(',')} (-1: no answer in 20 s)`);
    const failures = checks.finish({ requests: got.length, errors: got.filter((s) => s !== 200).length ? got.join(',') : 'none', moneyLost: '0', holds: 'every new connection was answered by the process that was not frozen' });
    if (failures.length) console.error(tail());
    expect(failures).toEqual([]);
  } finally {
    kill();
  }
});

/** A GET on a connection of its own (no keep-alive pool): its status, or -1 when nothing answered in time. */
function freshGet(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(timeoutMs, () => (req.destroy(), resolve(-1)));
    req.on('error', () => resolve(0));
  });
}

/** A GET on a connection of its own: new connections spread over the processes (each accepts from the shared socket). */
function getOnNewConnection(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0))).on('error', reject);
  });
}

/** The value of one series in a Prometheus text exposition (undefined when absent). */
function series(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

it('one scrape of /metrics under npm start (WEB_CONCURRENCY=2) counts the requests of both processes, behind METRICS_TOKEN', async () => {
  const token = 'cluster-metrics-token';
  const { url, tail, kill, stop } = await startNpmStart(c, 2, { METRICS_TOKEN: token });
  const parked = await c.queues.callbacks.add('parked', { generationId: 'gen_parked' }, { delay: 10 * 60_000 });
  try {
    const requests = 20;
    const codes = await Promise.all(Array.from({ length: requests }, () => getOnNewConnection(`${url}/healthz`)));
    expect(codes.every((code) => code === 200)).toBe(true);

    expect((await get(`${url}/metrics`)).status).toBe(401);
    // Consecutive scrapes land on either process: each must show the whole machine.
    const delayed = (await c.queues.callbacks.getJobCounts('delayed')).delayed;
    for (let i = 0; i < 4; i++) {
      const scrape = await get(`${url}/metrics`, { Authorization: `Bearer ${token}` });
      expect(scrape.status).toBe(200);
      expect({ scrape: i, healthz: series(scrape.text, 'switchyard_http_requests_total', { route: '/healthz', status: '200' }) }).toEqual({ scrape: i, healthz: requests });
      // Both processes read the same Redis: the queue depth is the queue's, not twice it.
      expect(series(scrape.text, 'switchyard_queue_jobs', { queue: 'callbacks', state: 'delayed' })).toBe(delayed);
    }
    expect(delayed).toBeGreaterThanOrEqual(1);
    expect(await stop()).toBe(0);
  } catch (e) {
    console.error(tail());
    throw e;
  } finally {
    await parked.remove();
    kill();
  }
});

it('a scrape while a replacement process starts answers at once; a frozen process makes it a 503, never a partial sum', async () => {
  const token = 'cluster-metrics-token';
  const log = path.join(c.dir, 'start.log'); // the cases of this file append to it: read what this one adds
  const from = fs.existsSync(log) ? fs.statSync(log).size : 0;
  // LOG_LEVEL info: the parent says when both processes serve.
  const { parent, url, tail, kill } = await startNpmStart(c, 2, { METRICS_TOKEN: token, LOG_LEVEL: 'info' });
  const scrape = () => freshScrape(`${url}/metrics`, token, 20_000);
  try {
    const until = Date.now() + 30_000;
    while (!fs.readFileSync(log, 'utf8').slice(from).includes('2 processes serve the API and the workers')) {
      if (Date.now() > until) throw new Error('the parent never said both processes serve');
      await sleep(100);
    }
    const [a, b] = childrenOf(parent.pid!);
    expect((await scrape()).status).toBe(200);

    // A serving process that cannot answer fails the scrape: a sum without its counts would read as a counter reset.
    process.kill(b, 'SIGSTOP');
    const frozen = await scrape().finally(() => process.kill(b, 'SIGCONT'));
    expect({ status: frozen.status, code: (JSON.parse(frozen.text || '{}') as { error?: { code?: string } }).error?.code, inTime: frozen.ms < 9_000 }).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE', inTime: true });
    expect((await scrape()).status).toBe(200);

    // A process killed: the parent forks its replacement a second later. Scrapes while it starts are not held up by it
    // (it serves nothing yet, so it is not asked): each answers at once.
    process.kill(a, 'SIGKILL');
    while (!childrenOf(parent.pid!).some((p) => p !== a && p !== b) && Date.now() < until + 30_000) await sleep(20);
    const starting = await Promise.all([scrape(), sleep(300).then(scrape)]);
    expect(starting.map((r) => ({ status: r.status, fast: r.ms < 3_000 }))).toEqual([{ status: 200, fast: true }, { status: 200, fast: true }]);
  } catch (e) {
    console.error(tail());
    throw e;
  } finally {
    kill();
  }
});

/** A GET of /metrics with the token, on a connection of its own (never a pooled one to a frozen process). */
function freshScrape(url: string, token: string, timeoutMs: number): Promise<{ status: number; ms: number; text: string }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: Date.now() - started, text }));
    });
    req.setTimeout(timeoutMs, () => (req.destroy(), resolve({ status: -1, ms: Date.now() - started, text: '' })));
    req.on('error', () => resolve({ status: 0, ms: Date.now() - started, text: '' }));
  });
}
