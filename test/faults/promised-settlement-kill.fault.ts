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
import { useCluster } from './helpers/cluster';
import { checkPromisesKept, killWhileBatchesWait, runKillCase } from './helpers/kill-case';
import { waitFor } from './helpers/wait';

const cluster = useCluster({ name: 'promised-settlement-kill' });

it('15. replies sent, their settlements promised but never committed (process SIGKILLed): kept at the replied cost', () =>
  runKillCase(
    cluster(),
    {
      name: '15. promised settlements, process SIGKILL',
      injected:
        'npm start, WEB_CONCURRENCY=2; the organization row locked from outside while 8 jobs answer, so they reply with the settlement promised and their closes wait in PostgreSQL; both processes SIGKILLed and their waiting backends terminated (nothing committed); then the lock released',
      input: 'promise',
    },
    async (k) => {
      const { c, checks, tally } = k;
      const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => k.ask(i)));
      tally.addAll(warm);

      // The jobs reserve (committed) and wait in their provider calls; the row is locked; the answers come.
      c.fake.setKnobs({ holdReplies: true });
      const before = k.upstreamPosts();
      const pending = Array.from({ length: 8 }, (_, i) => k.ask(100 + i));
      await waitFor('8 jobs inside their provider calls', async () => k.upstreamPosts() >= before + 8);
      const lock = await k.lockOrganization();
      c.fake.setKnobs({});
      const replies = await Promise.all(pending);
      tally.addAll(replies);
      checks.that(replies.every((r) => r.status === 200 && r.json?.status === 'completed'), `replies while the row was locked: ${replies.map((r) => r.status).join(',')}`);
      const ids = replies.map((r) => String(r.json?.id));
      const open = await c.db.generation.count({ where: { id: { in: ids }, status: { in: ['pending', 'processing'] } } });
      checks.that(open === ids.length, `generations replied to but not yet settled: ${open} of ${ids.length}`);
      const promisedBefore = await c.conn.hlen(k.journal);
      checks.that(promisedBefore === ids.length, `promised settlements in Redis: ${promisedBefore}`);

      const batches = await killWhileBatchesWait(k);
      await lock.release();

      // The replacements re-run the stalled jobs; they keep the promises.
      await k.replaced(2);
      await waitFor('the replied generations settled', async () => (await c.db.generation.count({ where: { id: { in: ids }, status: 'completed' } })) === ids.length, 30_000).catch(() => undefined);
      const audit = await settledAudit(c.db, 30_000);
      const upstream = k.upstreamPosts() - before;
      await checkPromisesKept(k, replies, upstream);
      return {
        audit,
        holds: `${ids.length} replies (200, with a cost) sent while the organization row was locked; ${batches} ledger group commit(s) waiting there ended with the SIGKILLed processes, nothing committed; the replacement's re-runs kept all ${ids.length} promises: each generation charged once, exactly the replied cost; ${upstream} upstream calls for them (no second call); no promise, reservation or money left over`,
      };
    },
  ));
