/**
 * Case 18. Reservation leases (docs/architecture.md "Leases", shared/billing/leases.ts): each process of `npm start`
 * holds a lease for the caller after its first requests, and grants the next ones from it in memory, calling their
 * providers while their records commit. Here one of the two processes (WEB_CONCURRENCY=2) is SIGKILLed while 8 such
 * requests are inside their provider calls (held there by the provider).
 * What must hold: the requests were granted from leases (their reservation entries move no money), in both processes
 * (a burst the kernel gave one process alone is let finish and sent again: kill-case.ts `burstOnBoth`); the killed
 * process's drawn jobs are re-run by the survivor, find no outcome and end failed, uncharged, with no second provider
 * call (one that found no room in its lease took the reserved path and, claimed at enqueue, ends the same way; one
 * that waited in the queue instead is re-run, completed and charged once);
 * the survivor's requests answer 200, charged once; the killed process's lease is released by the reaper once it
 * expires (LEASE_TTL_MS); nothing is left held, reserved, queued or lost.
 */
import { settledAudit } from './helpers/audit';
import { useCluster } from './helpers/cluster';
import { burstOnBoth, checkNothingReserved, endings, killOneMidCall, runKillCase, warmBothProcesses } from './helpers/kill-case';
import { waitFor } from './helpers/wait';

const cluster = useCluster({ name: 'lease-kill' });

it('18. requests granted from leases, their process SIGKILLed mid-call: re-run uncharged, the lease released by the reaper, nothing lost', () =>
  runKillCase(
    cluster(),
    {
      name: '18. reservation leases, process SIGKILL',
      injected: 'npm start, WEB_CONCURRENCY=2; both processes hold a lease for the caller after a warm-up (kept 5 s idle); 8 text requests granted from the leases; one process SIGKILLed inside their provider calls (held there by the provider)',
      input: 'leased',
      // The warm-up's leases are kept 5 s idle (the default 1 s may pass between the warm-up and the check on a busy
      // machine), short enough for the survivor to give its lease back within the final wait.
      env: { LEASE_IDLE_MS: '5000' },
    },
    async (k) => {
      const { c, checks } = k;
      await warmBothProcesses(k);
      const held = await k.leasesHeld();
      checks.that(held >= 1, `leases held after the warm-up: ${held}`);

      c.fake.setKnobs({ holdReplies: true });
      // Both processes must hold requests drawn from their leases: the killed one's are what the case is about.
      const burst = await burstOnBoth(k, 8, (_round, indexes, base) => indexes.map((i) => k.ask(100 + i, {}, base)), (b) => {
        const workersDrawing = new Set(b.jobs.flatMap((j, i) => (b.drawn.has(String(j.id)) ? [b.locks[i]?.split(':')[0]] : [])));
        return workersDrawing.size >= 2;
      });
      const { pending, drawn, before } = burst;
      const claimed = new Set(burst.jobs.filter((_, i) => burst.locks[i]?.includes(':claim:')).map((j) => String(j.id)));
      const ids = burst.jobs.map((j) => String(j.id));
      await waitFor('their records committed', async () => (await c.db.generation.count({ where: { id: { in: ids } } })) === 8, 10_000);
      // Drawn from a lease: the job says so, and its reservation entry moved no money (the lease had reserved it).
      const moved = (await c.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM ledger_entries WHERE kind = 'reserve' AND reserved_delta = 0 AND generation_id = ANY ($1)`, [...drawn]))[0]!.n;
      checks.that(drawn.size >= 4 && moved === drawn.size, `requests granted from a lease: ${drawn.size} of 8 (${moved} of them with a reservation entry that moved no money)`);

      const { replies, cut } = await killOneMidCall(k, pending);
      // The killed process's lease goes once it expires (LEASE_TTL_MS 5 s in this suite, the reaper every second); the
      // survivor gives its own back once idle.
      await waitFor('no lease left held', async () => (await k.leasesHeld()) === 0, 20_000).catch(() => undefined);
      const left = await k.leasesHeld();
      checks.that(left === 0, `leases still held: ${left}`);
      const audit = await settledAudit(c.db, 30_000);

      const { gens, failedUncharged, completed } = await endings(k, ids);
      const answered = new Set(replies.filter((r) => r.status === 200).map((r) => String(r.json?.id)));
      // A cut request claimed at enqueue (drawn from the lease, or reserved when the lease had no room) is an orphan:
      // failed and released, no second call. One that waited in the queue is re-run: a second call, completed, charged once.
      const cutGens = gens.filter((g) => !answered.has(g.id));
      const orphans = cutGens.filter((g) => claimed.has(g.id));
      const rerun = cutGens.length - orphans.length;
      const path = (id: string) => (drawn.has(id) ? 'drawn' : claimed.has(id) ? 'reserved, claimed' : 'reserved, queued');
      checks.that(cutGens.length === cut.length, `generations of the cut requests: ${cutGens.length}, cut replies ${cut.length}`);
      checks.that(cutGens.some((g) => drawn.has(g.id)), 'no cut request was drawn from a lease');
      checks.that(failedUncharged.length === orphans.length && orphans.every((g) => failedUncharged.some((f) => f.id === g.id)), `claimed cut requests ${orphans.length}, generations failed and released ${failedUncharged.length}`);
      checks.that(completed.length === 8 - orphans.length, `completed and charged: ${completed.length}; statuses ${gens.map((g) => `${g.status}(${path(g.id)})`).join(',')}`);
      checks.that([...answered].every((id) => completed.some((g) => g.id === id)), 'a 200 reply whose generation is not completed and charged');
      const upstream = k.upstreamPosts() - before;
      checks.that(upstream === 8 + rerun, `upstream calls for the 8 requests: ${upstream}, expected ${8 + rerun} (no second call for a client that is gone)`);
      await checkNothingReserved(k);
      return {
        audit,
        holds: `${held} leases after the warm-up; ${burst.retried ? `${burst.retried} burst(s) not drawn in both processes let finish; ` : ''}${drawn.size} of 8 requests granted from them; one process SIGKILLed inside their provider calls: ${cut.length} replies cut, the ${orphans.length} claimed at enqueue (${orphans.filter((g) => drawn.has(g.id)).length} drawn) re-run by the survivor and ended failed, uncharged, with no second call${rerun ? ` (${rerun} that had waited in the queue: re-run, completed, charged once)` : ''}; the survivor's ${8 - cut.length} answered 200 and were charged once; the killed process's lease released by the reaper; ${upstream} upstream calls; nothing left held, reserved or lost`,
      };
    },
  ));
