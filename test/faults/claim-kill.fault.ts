/**
 * Case 17. Claim at enqueue (docs/architecture.md, shared/queue/claims.ts): a waiting client's text job is added and
 * made active for a worker of its own process in one Redis script, and runs there without being fetched. Here one of
 * the two processes of `npm start` (WEB_CONCURRENCY=2) is SIGKILLed while such claimed jobs are inside their provider
 * call (held there by the provider): half of the requests carry an Idempotency-Key (reserved first, then enqueued), half do not (drawn from
 * the process's lease when it has one with room, else reserved like the keyed ones: docs/architecture.md "Submitting").
 * What must hold: every in-flight job was claimed (its lock carries a claim token; nothing waited in the queue); the
 * killed process's jobs are re-run by the survivor once their locks lapse, like any stalled BullMQ job: a keyed one
 * calls the provider again and completes, charged once (the key's repeat gets that answer); an unkeyed one, drawn or
 * reserved, is an orphan, its client gone with the process: it ends failed, uncharged, with no second call (an SDK
 * that retries the cut request is charged once, for the retry); the survivor's own requests answer 200; nothing is
 * left queued, reserved or lost.
 */
import { settledAudit } from './helpers/audit';
import { useCluster } from './helpers/cluster';
import { call } from './helpers/http';
import { burstOnBoth, checkNothingReserved, endings, killOneMidCall, runKillCase } from './helpers/kill-case';
import { waitFor } from './helpers/wait';
import { QUEUES } from '../../shared/queue/queue-names';

const cluster = useCluster({ name: 'claim-kill' });

/**
 * The case. `tightKey` (17b) sends no Idempotency-Key and, after the warm-up, gives the API key a limit that leaves room
 * for TIGHT_BOUNDS requests' bounds, below what a lease needs (LEASE_HEADROOM 8 leases of LEASE_REQUESTS 32 bounds):
 * the change revokes the key's leases and none is taken again, so every request is reserved, then claimed.
 */
const TIGHT_BOUNDS = 96;
function claimKill(o: { name: string; injected: string; tightKey?: boolean }) {
  return runKillCase(cluster(), { name: o.name, injected: o.injected, input: 'claimed' }, async (k) => {
    const { c, checks, tally, org } = k;
    const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => k.ask(i)));
    tally.addAll(warm);
    checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);
    if (o.tightKey) {
      await k.settled();
      const gens = await c.db.generation.findMany({ where: { id: { in: warm.map((r) => String(r.json?.id)) } }, select: { reservedAmount: true } });
      const bound = Math.max(...gens.map((g) => Number(g.reservedAmount)));
      const spent = Number((await c.db.apiKey.findUniqueOrThrow({ where: { id: org.key.id } })).periodSpent);
      const limit = Number((spent + TIGHT_BOUNDS * bound).toFixed(10));
      const res = await call('PATCH', `${k.npm.url}/v1/keys/${org.key.id}`, { limit }, { Authorization: `Bearer ${org.ownerToken}` });
      checks.that(res.status === 200 && bound > 0, `key limit ${limit} RUB (${TIGHT_BOUNDS} bounds of ${bound} over ${spent} spent): ${res.status}`);
      await waitFor('the key\'s leases given back', async () => (await k.leasesHeld()) === 0, 10_000).catch(() => undefined);
    }

    c.fake.setKnobs({ holdReplies: true });
    const burst = await burstOnBoth(k, 8, (round, indexes, base) =>
      // Half keyed; none in 17b, whose point is the unkeyed reserved requests (17 has the keyed ones).
      indexes.map((i) => k.ask(100 + i, i % 2 === 0 && !o.tightKey ? { 'Idempotency-Key': `claim-kill-${round}-${i}-${Date.now()}` } : {}, base)),
    );
    const { pending, locks, drawn, before } = burst;
    const claimed = locks.filter((l) => l?.includes(':claim:')).length;
    checks.that(claimed === 8, `jobs claimed at enqueue: ${claimed} of 8 (locks ${JSON.stringify(locks)})`);
    const waited = (await c.queues[QUEUES.text].getJobCounts('waiting')).waiting;
    checks.that(waited === 0, `jobs waiting in the queue: ${waited}`);

    const { replies, cut } = await killOneMidCall(k, pending);
    const audit = await settledAudit(c.db, 30_000);

    const ids = burst.jobs.map((j) => String(j.id));
    const { gens, failedUncharged, completed } = await endings(k, ids);
    const keyed = new Set((await c.db.idempotencyKey.findMany({ where: { organizationId: org.organizationId }, select: { generationId: true } })).map((g) => g.generationId));
    checks.that(gens.length === 8, `generations of the 8 requests: ${gens.length}`);
    const answered = new Set(replies.filter((r) => r.status === 200).map((r) => String(r.json?.id)));
    checks.that([...answered].every((id) => completed.some((g) => g.id === id)), 'a 200 reply whose generation is not completed and charged');
    checks.that([...drawn].every((id) => !keyed.has(id)), `keyed generations drawn from a lease: ${[...drawn].filter((id) => keyed.has(id)).join(',')}`);
    // The killed process's generations: an unkeyed one (drawn or reserved) is an orphan (failed, released, no second
    // call); a keyed one is re-run (a second call) and completes, charged once.
    const cutGens = gens.filter((g) => !answered.has(g.id));
    checks.that(cutGens.length === cut.length, `generations of the cut requests: ${cutGens.length}, cut replies ${cut.length}`);
    const orphans = cutGens.filter((g) => !keyed.has(g.id));
    const rerun = cutGens.filter((g) => keyed.has(g.id));
    const failedIds = new Set(failedUncharged.map((g) => g.id));
    const path = (id: string) => (keyed.has(id) ? 'keyed' : drawn.has(id) ? 'drawn' : 'reserved');
    checks.that(
      failedUncharged.length === orphans.length && orphans.every((g) => failedIds.has(g.id)),
      `unkeyed cut generations ${orphans.map((g) => `${g.id}(${path(g.id)})`).join(',') || 'none'}, failed and released ${failedUncharged.map((g) => g.id).join(',') || 'none'}`,
    );
    if (o.tightKey) checks.that(drawn.size === 0 && orphans.length > 0, `a key too tight for a lease: ${drawn.size} drawn, ${orphans.length} unkeyed reserved cut generations (the case needs at least one)`);
    checks.that(completed.length === 8 - orphans.length, `completed and charged: ${completed.length} of ${8 - orphans.length}; statuses ${gens.map((g) => `${g.status}(${path(g.id)})`).join(',')}`);
    const upstream = k.upstreamPosts() - before;
    checks.that(upstream === 8 + rerun.length, `upstream calls for the 8 requests: ${upstream}, expected ${8 + rerun.length} (a second call for each cut keyed request only)`);
    const orphansDrawn = orphans.filter((g) => drawn.has(g.id)).length;
    await checkNothingReserved(k);
    return {
      audit,
      holds: `${burst.retried ? `${burst.retried} burst(s) held by one process let finish; ` : ''}8 jobs claimed at enqueue (claim tokens on their locks, none waiting in the queue; ${drawn.size} drawn from leases); one process SIGKILLed inside their provider calls: ${cut.length} replies cut; its jobs re-run by the survivor after their locks lapsed: the ${rerun.length} keyed completed and were charged once (a second upstream call each), the ${orphans.length} unkeyed (${orphansDrawn} drawn, ${orphans.length - orphansDrawn} reserved) ended failed and released (no second call); the survivor's ${8 - cut.length} answered 200; ${upstream} upstream calls; no job, reservation or money left over`,
    };
  });
}

it('17. jobs claimed at enqueue, their process SIGKILLed mid-call: keyed ones re-run by the survivor and charged once, the others released', () =>
  claimKill({
    name: '17. claimed at enqueue, process SIGKILL',
    injected: 'npm start, WEB_CONCURRENCY=2; 8 text requests (4 with an Idempotency-Key, the others drawn from a lease or reserved) whose jobs were claimed at enqueue by the worker of their own process; one process SIGKILLed inside their provider calls (held there by the provider)',
  }));

it('17b. the same for a key too tight for a lease: the unkeyed requests, reserved and claimed, are released too', () =>
  claimKill({
    name: '17b. claimed at enqueue, no lease, process SIGKILL',
    injected: `as 17 without Idempotency-Keys; after the warm-up the API key's limit leaves room for ${TIGHT_BOUNDS} requests' bounds, below what a lease needs (8 leases of 32 bounds): its leases revoked, none taken again, so each of the 8 requests is reserved, then claimed at enqueue; one process SIGKILLed inside their provider calls (held there by the provider)`,
    tightKey: true,
  }));
