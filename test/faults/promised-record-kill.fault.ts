/**
 * Case 19. Reply on a promise that carries the record (docs/architecture.md "Leases"): a request granted from a lease
 * calls its provider while its record commits, and its reply goes out once its settlement promise, which carries the
 * record, is in Redis. Here no record can commit: the organization row is locked from outside before 8 such requests
 * arrive, so their records and closes wait in PostgreSQL while their replies go out. Both processes of `npm start`
 * (WEB_CONCURRENCY=2) are SIGKILLed and their waiting backends terminated, so nothing of theirs commits; then the lock
 * goes.
 * What must hold: every client got its answer (200, with a cost) while no record existed; the parent replaces the
 * processes; the stalled jobs, re-run there, keep the promises (the record written, then the charge) instead of calling
 * the provider again; every generation ends completed and charged exactly the replied cost, once; nothing is left
 * promised, held, reserved or lost.
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
  c = await startCluster({ name: 'promised-record-kill' });
});
afterAll(async () => {
  await c?.close();
});

it('19. replies granted from leases sent on promises carrying their records, never committed (processes SIGKILLed): recorded and charged at the replied cost', async () => {
  const checks = new Checks(
    '19. promised records, process SIGKILL',
    'npm start, WEB_CONCURRENCY=2; both processes hold a lease after a warm-up; the organization row locked from outside, then 8 requests granted from the leases: they reply on promises carrying their records while records and closes wait in PostgreSQL; both processes SIGKILLed and their waiting backends terminated (nothing committed); then the lock released',
  );
  const tally = new Tally();
  const { parent, url, tail, kill, stop } = await startNpmStart(c, 2);
  let lock: RowLock | undefined;
  try {
    const first = childrenOf(parent.pid!);
    const org = await c.seed({ balance: '100' });
    const ask = (i: number) => post(`${url}/v1/responses`, { model: MODELS.chat, input: `record ${i}`, max_output_tokens: 32 }, org.auth, 30_000);
    const heldLeases = async () => (await c.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM reservations WHERE expires_at IS NOT NULL AND status = 'held'`))[0]!.n;
    // Warm-up in pairs, so that both processes serve some and each takes a lease.
    for (let i = 0; i < 6; i++) {
      const warm = await Promise.all([ask(2 * i), ask(2 * i + 1)]);
      tally.addAll(warm);
      checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);
    }
    await waitFor('a lease held by each process', async () => (await heldLeases()) >= 2, 10_000).catch(() => undefined);
    const held = await heldLeases();
    checks.that(held >= 2, `leases held after the warm-up: ${held}`);

    const posts = () => c.fake.requests.filter((r) => r.method === 'POST').length;
    const before = posts();
    lock = await lockOrganization(c.pg.url, org.organizationId);
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => ask(100 + i)));
    tally.addAll(replies);
    checks.that(replies.every((r) => r.status === 200 && r.json?.status === 'completed' && Number(r.json?.usage?.cost) > 0), `replies while the row was locked: ${replies.map((r) => r.status).join(',')}`);
    const ids = replies.map((r) => String(r.json?.id));
    const recorded = await c.db.generation.count({ where: { id: { in: ids } } });
    checks.that(recorded === 0, `generations replied to and already recorded: ${recorded} of ${ids.length} (expected none: their records wait on the lock)`);
    const journal = `${c.env.QUEUE_PREFIX}:settling:${org.organizationId}`;
    const promises = (await c.conn.hmget(journal, ...ids)).map((t) => (t ? (JSON.parse(t) as { open?: { id: string } }) : null));
    checks.that(promises.every((p, i) => p?.open?.id === ids[i]), `promises carrying their records: ${promises.filter((p) => p?.open).length} of ${ids.length}`);

    // Kill the processes; end their statements waiting on the lock, so PostgreSQL commits none of them.
    const waiting = () => ledgerBatchesWaiting(c.db);
    await waitFor('the records waiting on the row lock', async () => (await waiting()).length > 0, 10_000).catch(() => undefined);
    const backends = await waiting();
    checks.that(backends.length > 0, 'no ledger batch waited on the row lock');
    for (const p of first) process.kill(p, 'SIGKILL');
    await waitFor('the killed processes gone', async () => childrenOf(parent.pid!).every((p) => !first.includes(p)), 10_000);
    await c.db.$queryRawUnsafe(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, backends);
    await waitFor('its backends gone', async () => (await waiting()).every((p) => !backends.includes(p)), 10_000);
    const unrecorded = await c.db.generation.count({ where: { id: { in: ids } } });
    checks.that(unrecorded === 0, `records committed before the kill: ${unrecorded}`);
    await lock.release();

    // The replacements re-run the stalled jobs; they keep the promises: the record, then the charge.
    await waitFor('two replacement processes', async () => childrenOf(parent.pid!).filter((p) => !first.includes(p)).length === 2, 30_000);
    await waitFor('the replied generations recorded and settled', async () => (await c.db.generation.count({ where: { id: { in: ids }, status: 'completed' } })) === ids.length, 40_000).catch(() => undefined);
    await waitFor('no lease left held', async () => (await heldLeases()) === 0, 30_000).catch(() => undefined);
    const left = await heldLeases();
    checks.that(left === 0, `leases still held: ${left}`);
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
    const promisedAfter = await c.conn.hlen(journal);
    checks.that(promisedAfter === 0, `promises left in Redis: ${promisedAfter}`);
    const o = await c.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
    checks.that(Number(o.reserved) === 0, `reserved left on the organization: ${o.reserved}`);

    const after = await Promise.all(Array.from({ length: 4 }, (_, i) => ask(200 + i)));
    tally.addAll(after);
    checks.that(after.every((r) => r.status === 200), `after the replacement: ${after.map((r) => r.status).join(',')}`);

    const code = await stop();
    checks.that(code === 0, `parent exit on SIGTERM: ${code}`);
    const failures = checks.finishAudited(a, {
      requests: tally.total,
      errors: tally.errors(),
      holds: `${held} leases after the warm-up; ${ids.length} replies (200, with a cost) sent on promises carrying their records while the organization row was locked, none recorded; ${backends.length} ledger batch(es) waiting there ended with the SIGKILLed processes; the replacements' re-runs kept all ${ids.length} promises: each generation recorded and charged once, exactly the replied cost; ${upstream} upstream calls for them (no second call); no promise, lease, reservation or money left over; SIGTERM stopped all (exit ${code})`,
    });
    if (failures.length) console.error(tail());
    expect(failures).toEqual([]);
  } finally {
    await lock?.release().catch(() => undefined);
    kill();
  }
});
