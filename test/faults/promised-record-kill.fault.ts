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
import { useCluster } from './helpers/cluster';
import { checkNothingReserved, checkPromisesKept, killWhileBatchesWait, runKillCase, warmBothProcesses } from './helpers/kill-case';
import { waitFor } from './helpers/wait';

const cluster = useCluster({ name: 'promised-record-kill' });

it('19. replies granted from leases sent on promises carrying their records, never committed (processes SIGKILLed): recorded and charged at the replied cost', () =>
  runKillCase(
    cluster(),
    {
      name: '19. promised records, process SIGKILL',
      injected:
        'npm start, WEB_CONCURRENCY=2, leases kept 60 s idle (LEASE_IDLE_MS; the default 1 s gave them back while the warm-up settled); both processes hold a lease after a warm-up; the organization row locked from outside, then 8 requests granted from the leases: they reply on promises carrying their records while records and closes wait in PostgreSQL; both processes SIGKILLed and their waiting backends terminated (nothing committed); then the lock released',
      input: 'record',
      // The warm-up's leases must outlive its settling, which takes more than the default idle second on a busy
      // machine: a process without a lease reserves for itself, and that waits on the locked row.
      env: { LEASE_IDLE_MS: '60000', LEASE_MAX_AGE_MS: '120000' },
    },
    async (k) => {
      const { c, checks, tally } = k;
      await warmBothProcesses(k);
      await waitFor('a lease held by each process', async () => (await k.leasesHeld()) >= 2, 10_000).catch(() => undefined);
      const held = await k.leasesHeld();
      checks.that(held >= 2, `leases held after the warm-up: ${held}`);

      const before = k.upstreamPosts();
      await k.settled();
      const lock = await k.lockOrganization();
      const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => k.ask(100 + i)));
      tally.addAll(replies);
      checks.that(replies.every((r) => r.status === 200 && r.json?.status === 'completed' && Number(r.json?.usage?.cost) > 0), `replies while the row was locked: ${replies.map((r) => r.status).join(',')}`);
      const ids = replies.map((r) => String(r.json?.id));
      const recorded = await c.db.generation.count({ where: { id: { in: ids } } });
      checks.that(recorded === 0, `generations replied to and already recorded: ${recorded} of ${ids.length} (expected none: their records wait on the lock)`);
      const promises = (await c.conn.hmget(k.journal, ...ids)).map((t) => (t ? (JSON.parse(t) as { open?: { id: string } }) : null));
      checks.that(promises.every((p, i) => p?.open?.id === ids[i]), `promises carrying their records: ${promises.filter((p) => p?.open).length} of ${ids.length}`);

      const batches = await killWhileBatchesWait(k);
      const unrecorded = await c.db.generation.count({ where: { id: { in: ids } } });
      checks.that(unrecorded === 0, `records committed before the kill: ${unrecorded}`);
      await lock.release();

      // The replacements re-run the stalled jobs; they keep the promises: the record, then the charge.
      await k.replaced(2);
      await waitFor('the replied generations recorded and settled', async () => (await c.db.generation.count({ where: { id: { in: ids }, status: 'completed' } })) === ids.length, 40_000).catch(() => undefined);
      await waitFor('no lease left held', async () => (await k.leasesHeld()) === 0, 30_000).catch(() => undefined);
      const left = await k.leasesHeld();
      checks.that(left === 0, `leases still held: ${left}`);
      const audit = await settledAudit(c.db, 30_000);
      const upstream = k.upstreamPosts() - before;
      await checkPromisesKept(k, replies, upstream);
      await checkNothingReserved(k);
      return {
        audit,
        holds: `${held} leases after the warm-up; ${ids.length} replies (200, with a cost) sent on promises carrying their records while the organization row was locked, none recorded; ${batches} ledger group commit(s) waiting there ended with the SIGKILLed processes; the replacements' re-runs kept all ${ids.length} promises: each generation recorded and charged once, exactly the replied cost; ${upstream} upstream calls for them (no second call); no promise, lease, reservation or money left over`,
      };
    },
  ),
  // Its waits add up to about 185 s when a precondition is missed (the leases, the asks' 30 s, the replacements, the
  // settling, the leases' release, the audit): within this budget a failure reports its checks instead of a time-out.
  240_000,
);
