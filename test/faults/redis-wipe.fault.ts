/**
 * Case 20. Redis comes back empty (restarted without its append-only file), and then a process holding a reservation
 * lease (API and workers in one, as `npm start` runs them: only a process with workers draws from leases) is SIGKILLed. The wipe takes the maintenance queue's schedulers with it, and the jobs that waited
 * in the queue. What must hold, with the worker process never restarted: the reaper runs again by itself
 * (workers/schedules.ts), so within its period (REAPER_EVERY_MS) the killed process's lease, once expired
 * (LEASE_TTL_MS), is released and the generations whose jobs were lost are failed and released; every reply that
 * showed a cost is charged exactly that, once; nothing is left held, reserved or pending.
 */
import { settledAudit } from './helpers/audit';
import { MODELS, useCluster } from './helpers/cluster';
import { post, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { QUEUES } from '../../shared/queue/queue-names';
import { REAP_STUCK_GENERATIONS } from '../../workers/processors/reap-stuck-generations.processor';

const cluster = useCluster({ name: 'redis-wipe' });

it('20. Redis restarted empty, then an API process SIGKILLed: the running worker sweeps its lease and the lost jobs, nothing held', async () => {
  const c = cluster();
  const checks = new Checks(
    '20. Redis wiped, then an API SIGKILL',
    '1 API-and-workers process + 1 worker (text concurrency 1 each); the first holds a lease after 6 requests (kept, never idle nor old); 4 background requests (held inside their provider calls), 2 of them waiting in the queue; Redis SIGKILLed and started again without its append-only file; the API-and-workers process SIGKILLed; the worker left running',
  );
  const tally = new Tally();
  // Its lease is kept until the SIGKILL: not given back idle (1 s by default, which a slow machine may pass between
  // two requests) nor replaced for its age.
  const api = await c.startAll({ WORKER_CONCURRENCY_TEXT: '1', LEASE_IDLE_MS: '600000', LEASE_MAX_AGE_MS: '600000' });
  const worker = await c.startWorker({ WORKER_CONCURRENCY_TEXT: '1' });
  const org = await c.seed({ balance: '100' });
  const ask = (i: number, extra: object = {}) => post(`${api.url}/v1/responses`, { model: MODELS.chat, input: `wipe ${i}`, max_output_tokens: 32, ...extra }, org.auth, 30_000);
  const leasesHeld = async () => (await c.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM reservations WHERE expires_at IS NOT NULL AND status = 'held'`))[0]!.n;
  const running = () => c.db.generation.count({ where: { status: { in: ['pending', 'processing'] } } });

  const sync = [];
  for (let i = 0; i < 6; i++) sync.push(await ask(i));
  tally.addAll(sync);
  checks.that(sync.every((r) => r.status === 200), `requests before the wipe: ${sync.map((r) => r.status).join(',')}`);
  await waitFor('a lease held by the API-and-workers process', async () => (await leasesHeld()) >= 1, 10_000).catch(() => undefined);
  const held = await leasesHeld();
  checks.that(held >= 1, `leases held before the wipe: ${held}`);

  c.fake.setKnobs({ holdReplies: true });
  const background = await Promise.all(Array.from({ length: 4 }, (_, i) => ask(100 + i, { background: true })));
  tally.addAll(background);
  checks.that(background.every((r) => r.status === 200), `background requests: ${background.map((r) => r.status).join(',')}`);
  const text = c.queues[QUEUES.text];
  await waitFor('2 jobs running (one per process), 2 waiting (background work waits prioritized: fair queues)', async () => {
    const n = await text.getJobCounts('active', 'waiting', 'prioritized');
    return n.active === 2 && n.waiting + n.prioritized === 2;
  }, 10_000);

  const wipedAt = Date.now();
  await c.redis.wipe();
  api.kill('SIGKILL');
  await api.exited;
  c.fake.setKnobs({});

  // The lease expires LEASE_TTL_MS (5 s) after its last renewal, the lost jobs' generations are old enough for the reaper
  // REAPER_MIN_AGE_MS (5 s) after their creation; the reaper runs every REAPER_EVERY_MS (1 s). Waited for up to 20 s: a
  // reaper not scheduled again would never run, and they would stay; the time it took is reported, not judged.
  await waitFor('the lease released and no generation running', async () => (await leasesHeld()) === 0 && (await running()) === 0, 20_000).catch(() => undefined);
  const sweptMs = Date.now() - wipedAt;
  const left = { leases: await leasesHeld(), running: await running() };
  checks.that(left.leases === 0 && left.running === 0, `${left.leases} lease(s) still held and ${left.running} generation(s) still running ${sweptMs} ms after the wipe (the reaper did not run again)`);
  checks.that(worker.alive && c.procs.filter((p) => p.role === 'worker').length === 1, 'the worker was restarted or died');
  const scheduler = await c.queues[QUEUES.maintenance].getJobScheduler(REAP_STUCK_GENERATIONS);
  checks.that(scheduler !== undefined, 'the reaper is not scheduled in Redis after the wipe');

  // Every reply that showed a cost is charged exactly that, once.
  const costly = sync.filter((r) => r.json?.usage?.cost !== undefined);
  const ids = costly.map((r) => String(r.json?.id));
  const rows = await c.db.generation.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, clientCost: true } });
  const wrong = costly.filter((r) => {
    const g = rows.find((x) => x.id === r.json?.id);
    return !g || g.status !== 'completed' || Math.abs(Number(g.clientCost) - Number(r.json?.usage?.cost)) > 1e-9;
  });
  checks.that(costly.length === sync.length && wrong.length === 0, `replies whose cost is not the charge: ${wrong.map((r) => r.json?.id).join(', ')} (${costly.length} of ${sync.length} showed a cost)`);
  const settlements = await c.db.$queryRawUnsafe<Array<{ id: string; n: number }>>(
    `SELECT g.id, COUNT(l.id)::int AS n FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id AND l.kind = 'charge' WHERE g.id = ANY ($1::text[]) GROUP BY g.id`,
    ids,
  );
  checks.that(settlements.length === ids.length && settlements.every((s) => s.n === 1), `charges per replied generation: ${settlements.map((s) => s.n).join(',')}`);
  const bg = await c.db.generation.findMany({ where: { id: { in: background.map((r) => String(r.json?.id)) } }, select: { status: true } });
  const audit = await settledAudit(c.db, 30_000);

  // The system serves again on the wiped Redis: a new API process, the same worker.
  const api2 = await c.startApi();
  const after = await Promise.all([0, 1].map((i) => post(`${api2.url}/v1/responses`, { model: MODELS.chat, input: `after ${i}`, max_output_tokens: 32 }, org.auth, 30_000)));
  tally.addAll(after);
  checks.that(after.every((r) => r.status === 200), `after the wipe: ${after.map((r) => r.status).join(',')}`);

  const failures = checks.finishAudited(audit, {
    requests: tally.total,
    errors: tally.errors(),
    holds:
      `${held} lease(s) before the wipe; Redis restarted empty and the API-and-workers process SIGKILLed; the worker, never restarted, scheduled its reaper again: the lease released and ${bg.filter((g) => g.status === 'failed').length} lost background generations failed and released ${sweptMs} ms after the wipe ` +
      `(background: ${bg.map((g) => g.status).join(', ')}); ${costly.length} replies with a cost each charged once, exactly; nothing held, reserved or pending; a new API served 200 on the wiped Redis`,
  });
  if (failures.length) console.error(c.tails(30));
  expect(failures).toEqual([]);
});
