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
import { childrenOf, killChild, listensOn, startNpmStart, tcpSocketsOf } from './helpers/processes';
import { waitFor } from './helpers/wait';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'start-cluster' });
});
afterAll(async () => {
  await c?.close();
});

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

    // Kill one process with requests in flight (at the provider, one at least held by that process); the parent
    // replaces it.
    const port = Number(new URL(url).port);
    c.fake.setKnobs({ holdReplies: true });
    const calls = c.fake.requests.length;
    const during = Array.from({ length: 12 }, (_, i) => ask(100 + i));
    await waitFor('requests in flight at the provider, one held by the process to kill', async () => c.fake.requests.length - calls >= 12 && tcpSocketsOf(first[0]).some((s) => !s.listening && s.port === port), 20_000);
    await killChild(parent.pid!, first[0]);
    c.fake.setKnobs({});
    tally.addAll(await Promise.all(during));
    // The parent forks a replacement (a second later), which serves once it listens on the port.
    const replacement = () => childrenOf(parent.pid!).filter((p) => !first.includes(p));
    await waitFor('the replacement to listen', async () => replacement().some((p) => listensOn(p, port)) && childrenOf(parent.pid!).length === 2, 30_000).catch(() => undefined);
    const second = childrenOf(parent.pid!);
    checks.that(second.length === 2 && !second.includes(first[0]), `after the kill: processes ${second.join(',')} (killed ${first[0]})`);
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
    // Every connection made (the handshake done: at the shared socket, waiting to be taken) before the kill.
    let connected = 0;
    const replies = Array.from({ length: 8 }, () => freshGet(`${url}/readyz`, 20_000, () => connected++));
    await waitFor('the 8 connections made', async () => connected === 8, 20_000);
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
function freshGet(url: string, timeoutMs: number, onConnect?: () => void): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    if (onConnect) req.once('socket', (socket) => socket.once('connect', onConnect));
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
    await waitFor('the parent to say both processes serve', async () => fs.readFileSync(log, 'utf8').slice(from).includes('2 processes serve the API and the workers'), 30_000);
    const [a, b] = childrenOf(parent.pid!);
    expect((await scrape()).status).toBe(200);

    // A serving process that cannot answer fails the scrape: a sum without its counts would read as a counter reset.
    process.kill(b, 'SIGSTOP');
    const frozen = await scrape().finally(() => process.kill(b, 'SIGCONT'));
    expect({ status: frozen.status, code: (JSON.parse(frozen.text || '{}') as { error?: { code?: string } }).error?.code }).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect((await scrape()).status).toBe(200);

    // A process killed: the parent forks its replacement a second later. Scrapes while it starts are not held up by it
    // (it serves nothing yet, so it is not asked): held stopped as it starts, a process asked would make them 503s.
    process.kill(a, 'SIGKILL');
    let starting = 0;
    // Forked and started as a process of its own (node:cluster's NODE_UNIQUE_ID in its environment): stopped between
    // fork and exec it would hold up the primary, which waits for that exec.
    const started = (pid: number) => {
      try {
        return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').some((v) => v.startsWith('NODE_UNIQUE_ID='));
      } catch {
        return false;
      }
    };
    await waitFor('the replacement started', async () => {
      starting = childrenOf(parent.pid!).find((p) => p !== a && p !== b && started(p)) ?? 0;
      return starting > 0;
    }, 30_000);
    process.kill(starting, 'SIGSTOP');
    const scrapes = await Promise.all([scrape(), scrape()]).finally(() => process.kill(starting, 'SIGCONT'));
    expect(scrapes.map((r) => r.status)).toEqual([200, 200]);
  } catch (e) {
    console.error(tail());
    throw e;
  } finally {
    kill();
  }
});

/** A GET of /metrics with the token, on a connection of its own (never a pooled one to a frozen process); -1: no answer in time. */
function freshScrape(url: string, token: string, timeoutMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, headers: { Authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.setTimeout(timeoutMs, () => (req.destroy(), resolve({ status: -1, text: '' })));
    req.on('error', () => resolve({ status: 0, text: '' }));
  });
}
