/**
 * Case 15. Reply, then settle (docs/architecture.md): a worker whose answer costs no more than its reservation
 * promises the settlement in Redis (shared/billing/settlement-journal.ts), replies, and commits after. Here the
 * commits cannot happen: the organization row is locked from outside while 8 jobs answer, so their replies go out
 * and their closes wait in PostgreSQL. Both processes of `npm start` (WEB_CONCURRENCY=2, each API and workers) are
 * SIGKILLed and their waiting backends terminated, so those closes are never committed; then the lock goes.
 * What must hold: every client got its answer (200) before the kill, with a cost; the parent replaces the processes;
 * the stalled jobs, re-run there, keep the promises instead of calling the provider again; every generation ends
 * charged exactly the cost its reply showed, once; nothing is left promised, reserved or lost.
 */
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster } from './helpers/cluster';
import { post, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { childrenOf, startNpmStart } from './helpers/processes';
import { waitFor } from './helpers/wait';
import { ledgerBatchesWaiting, lockOrganization, type RowLock } from './helpers/locks';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'promised-settlement-kill' });
});
afterAll(async () => {
  await c?.close();
});

it('15. replies sent, their settlements promised but never committed (process SIGKILLed): kept at the replied cost', async () => {
  const checks = new Checks(
    '15. promised settlements, process SIGKILL',
    'npm start, WEB_CONCURRENCY=2; the organization row locked from outside while 8 jobs answer, so they reply with the settlement promised and their closes wait in PostgreSQL; both processes SIGKILLed and their waiting backends terminated (nothing committed); then the lock released',
  );
  const tally = new Tally();
  const { parent, url, tail, kill, stop } = await startNpmStart(c, 2);
  let lock: RowLock | undefined;
  try {
    const first = childrenOf(parent.pid!);
    const org = await c.seed({ balance: '100' });
    const ask = (i: number) => post(`${url}/v1/responses`, { model: MODELS.chat, input: `promise ${i}`, max_output_tokens: 32 }, org.auth, 30_000);
    const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => ask(i)));
    tally.addAll(warm);

    // The jobs reserve (committed) and wait in their provider calls; the row is locked; the answers come.
    c.fake.setKnobs({ latencyMs: 1500 });
    const posts = () => c.fake.requests.filter((r) => r.method === 'POST').length;
    const before = posts();
    const pending = Array.from({ length: 8 }, (_, i) => ask(100 + i));
    await waitFor('8 jobs inside their provider calls', async () => posts() >= before + 8);
    lock = await lockOrganization(c.pg.url, org.organizationId);
    const replies = await Promise.all(pending);
    tally.addAll(replies);
    checks.that(replies.every((r) => r.status === 200 && r.json?.status === 'completed'), `replies while the row was locked: ${replies.map((r) => r.status).join(',')}`);
    const ids = replies.map((r) => String(r.json?.id));
    const open = await c.db.generation.count({ where: { id: { in: ids }, status: { in: ['pending', 'processing'] } } });
    checks.that(open === ids.length, `generations replied to but not yet settled: ${open} of ${ids.length}`);
    const promisedBefore = await c.conn.hlen(`${c.env.QUEUE_PREFIX}:settling:${org.organizationId}`);
    checks.that(promisedBefore === ids.length, `promised settlements in Redis: ${promisedBefore}`);

    // Kill the processes; end their statements waiting on the lock, so PostgreSQL commits none of them.
    const waiting = () => ledgerBatchesWaiting(c.db);
    await waitFor('the closes waiting on the row lock', async () => (await waiting()).length > 0, 10_000).catch(() => undefined);
    const backends = await waiting();
    checks.that(backends.length > 0, 'no ledger batch waited on the row lock');
    for (const p of first) process.kill(p, 'SIGKILL');
    await waitFor('the killed processes gone', async () => childrenOf(parent.pid!).every((p) => !first.includes(p)), 10_000);
    await c.db.$queryRawUnsafe(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, backends);
    await waitFor('its backends gone', async () => (await waiting()).every((p) => !backends.includes(p)), 10_000);
    await lock.release();
    c.fake.setKnobs({ latencyMs: 0 });

    // The replacement re-runs the stalled jobs; they keep the promises.
    await waitFor('two replacement processes', async () => childrenOf(parent.pid!).filter((p) => !first.includes(p)).length === 2, 30_000);
    await waitFor('the replied generations settled', async () => (await c.db.generation.count({ where: { id: { in: ids }, status: 'completed' } })) === ids.length, 30_000).catch(() => undefined);
    const a = await settledAudit(c.db, 30_000);

    const rows = await c.db.generation.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, clientCost: true } });
    const byId = new Map(rows.map((g) => [g.id, g]));
    const wrong = replies.filter((r) => {
      const g = byId.get(String(r.json?.id));
      return !g || g.status !== 'completed' || Math.abs(Number(g.clientCost) - Number(r.json?.usage?.cost)) > 1e-9;
    });
    checks.that(wrong.length === 0, `replies whose cost is not the charge: ${wrong.map((r) => `${r.json?.id} ${r.json?.usage?.cost} vs ${JSON.stringify(byId.get(String(r.json?.id)))}`).join(', ')}`);
    const settlements = await c.db.$queryRawUnsafe<Array<{ n: number }>>(
      `SELECT COUNT(l.id)::int AS n FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id AND l.kind IN ('charge', 'release') WHERE g.id = ANY ($1::text[]) GROUP BY g.id`,
      ids,
    );
    checks.that(settlements.length === ids.length && settlements.every((s) => s.n === 1), `settlements per generation: ${settlements.map((s) => s.n).join(',')}`);
    const upstream = posts() - before;
    checks.that(upstream === ids.length, `upstream calls for the 8 replied requests: ${upstream} (a re-run must not call the provider again)`);
    const promisedAfter = await c.conn.hlen(`${c.env.QUEUE_PREFIX}:settling:${org.organizationId}`);
    checks.that(promisedAfter === 0, `promises left in Redis: ${promisedAfter}`);

    const after = await Promise.all(Array.from({ length: 4 }, (_, i) => ask(200 + i)));
    tally.addAll(after);
    checks.that(after.every((r) => r.status === 200), `after the replacement: ${after.map((r) => r.status).join(',')}`);

    const code = await stop();
    checks.that(code === 0, `parent exit on SIGTERM: ${code}`);
    const failures = checks.finishAudited(a, {
      requests: tally.total,
      errors: tally.errors(),
      holds: `${ids.length} replies (200, with a cost) sent while the organization row was locked; ${backends.length} ledger batch(es) waiting there ended with the SIGKILLed processes, nothing committed; the replacement's re-runs kept all ${ids.length} promises: each generation charged once, exactly the replied cost; ${upstream} upstream calls for them (no second call); no promise, reservation or money left over; SIGTERM stopped all (exit ${code})`,
    });
    if (failures.length) console.error(tail());
    expect(failures).toEqual([]);
  } finally {
    await lock?.release().catch(() => undefined);
    kill();
  }
});
