/**
 * Case 16. Reserve and enqueue at once (docs/architecture.md, shared/queue/grants.ts): a waiting client's text job goes
 * to the queue while its reservation commits, and its worker calls no provider before the reservation's outcome
 * reaches it. Here the outcomes never come: the organization row is locked from outside, so 8 requests' reservations
 * wait in PostgreSQL (or in their process's batcher behind them) while their jobs are already picked up and waiting.
 * Both processes of `npm start` (WEB_CONCURRENCY=2) are SIGKILLed, then the lock goes: the reservations that were
 * inside PostgreSQL commit for clients that are gone, the rest were never sent.
 * What must hold: the parent replaces the processes; the stalled jobs, re-run there, find no outcome; a job whose
 * reservation committed ends its generation failed and releases the money (orphaned), a job whose reservation never
 * came ends without running (WORKER_GRANT_WAIT_MS); no provider is called for any of the 8; nothing is left reserved,
 * queued or lost.
 */
import { settledAudit } from './helpers/audit';
import { useCluster } from './helpers/cluster';
import { checkNothingReserved, runKillCase } from './helpers/kill-case';
import { ledgerBatchesWaiting } from './helpers/locks';
import { childrenOf } from './helpers/processes';
import { queueSettled, waitFor } from './helpers/wait';
import { QUEUES } from '../../shared/queue/queue-names';

// No reservation leases: this case holds reservations inside PostgreSQL, where a lease's requests never wait.
const cluster = useCluster({ name: 'reserve-at-once-kill', env: { WORKER_GRANT_WAIT_MS: '4000', LEASE_REQUESTS: '0' } });

it('16. jobs enqueued with their reservations, the API processes SIGKILLed before telling the outcomes: none runs, nothing stays reserved', () =>
  runKillCase(
    cluster(),
    {
      name: '16. reserve and enqueue at once, process SIGKILL',
      injected:
        'npm start, WEB_CONCURRENCY=2; the organization row locked from outside while 8 requests reserve, so their jobs are picked up and wait for outcomes that do not come; both processes SIGKILLed; then the lock released (the reservations inside PostgreSQL commit for clients that are gone)',
      input: 'at once',
    },
    async (k) => {
      const { c, checks, tally, org, npm, first } = k;
      const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => k.ask(i)));
      tally.addAll(warm);
      checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);
      const warmIds = warm.map((r) => String(r.json?.id));

      await k.settled();
      const lock = await k.lockOrganization();
      const before = k.upstreamPosts();
      const pending = Array.from({ length: 8 }, (_, i) => k.ask(100 + i));
      const text = c.queues[QUEUES.text];
      await waitFor('8 jobs picked up, waiting for their reservations', async () => (await text.getJobCounts('active')).active === 8, 15_000);
      const waiting = () => ledgerBatchesWaiting(c.db);
      await waitFor('reservations waiting on the row lock', async () => (await waiting()).length > 0, 10_000).catch(() => undefined);
      const backends = (await waiting()).length;
      checks.that(backends > 0, 'no ledger batch waited on the row lock');

      for (const p of first) process.kill(p, 'SIGKILL');
      await waitFor('the killed processes gone', async () => childrenOf(npm.parent.pid!).every((p) => !first.includes(p)), 10_000);
      const replies = await Promise.all(pending);
      tally.addAll(replies);
      checks.that(replies.every((r) => r.status !== 200), `answers from killed processes: ${replies.map((r) => r.status).join(',')}`);
      // The reservations inside PostgreSQL commit now, for clients that are gone.
      await lock.release();

      await k.replaced(2);
      const counts = await queueSettled(text, 40_000);
      checks.that(Object.values(counts).every((v) => v === 0), `text jobs left: ${JSON.stringify(counts)}`);
      const audit = await settledAudit(c.db, 30_000);

      const recorded = await c.db.generation.findMany({ where: { organizationId: org.organizationId, id: { notIn: warmIds } }, select: { id: true, status: true, error: true, clientCost: true } });
      const notFailed = recorded.filter((g) => g.status !== 'failed' || (g.error as { code?: string } | null)?.code !== 'SERVICE_UNAVAILABLE' || Number(g.clientCost) !== 0);
      checks.that(recorded.length > 0, 'no reservation committed after the kill: the orphaned path was not exercised');
      checks.that(recorded.length < 8, `every reservation committed (${recorded.length}): the never-reserved path was not exercised`);
      checks.that(notFailed.length === 0, `reserved generations not ended failed, uncharged: ${JSON.stringify(notFailed)}`);
      const upstream = k.upstreamPosts() - before;
      checks.that(upstream === 0, `upstream calls for the 8 requests: ${upstream} (no provider before an outcome)`);
      await checkNothingReserved(k);
      return {
        audit,
        holds: `8 jobs picked up while their reservations waited on the locked row (${backends} ledger batch(es) inside PostgreSQL); both processes SIGKILLed; ${recorded.length} reservation(s) committed afterwards for gone clients: their re-run jobs ended them failed and released the money; the other ${8 - recorded.length} were never reserved and their jobs ended without running; 0 upstream calls for the 8; no job, reservation or money left over`,
      };
    },
  ));
