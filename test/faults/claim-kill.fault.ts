/**
 * Case 17. Claim at enqueue (docs/architecture.md, shared/queue/claims.ts): a waiting client's text job is added and
 * made active for a worker of its own process in one Redis script, and runs there without being fetched. Here one of
 * the two processes of `npm start` (WEB_CONCURRENCY=2) is SIGKILLed while such claimed jobs are inside their provider
 * call (2 s): half of the requests carry an Idempotency-Key (reserved first, then enqueued), half do not (reserved and
 * enqueued at once, their outcome handed over in memory).
 * What must hold: every in-flight job was claimed (its lock carries a claim token; nothing waited in the queue); the
 * killed process's jobs are re-run by the survivor once their locks lapse, like any stalled BullMQ job: a keyed one
 * calls the provider again and completes, charged once; an unkeyed one finds its reservation orphaned and ends failed,
 * uncharged, with no second call; the survivor's own requests answer 200; nothing is left queued, reserved or lost.
 */
import { settledAudit } from './helpers/audit';
import { PREFIX, useCluster } from './helpers/cluster';
import { checkNothingReserved, endings, killOneMidCall, runKillCase } from './helpers/kill-case';
import { waitFor } from './helpers/wait';
import { QUEUES } from '../../shared/queue/queue-names';

const cluster = useCluster({ name: 'claim-kill' });

it('17. jobs claimed at enqueue, their process SIGKILLed mid-call: re-run by the survivor, keyed ones charged once, the others released', () =>
  runKillCase(
    cluster(),
    {
      name: '17. claimed at enqueue, process SIGKILL',
      injected: 'npm start, WEB_CONCURRENCY=2; 8 text requests (4 with an Idempotency-Key) whose jobs were claimed at enqueue by the worker of their own process; one process SIGKILLed inside their provider calls (2 s)',
      input: 'claimed',
    },
    async (k) => {
      const { c, checks, tally, org } = k;
      const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => k.ask(i)));
      tally.addAll(warm);
      checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);

      const before = k.upstreamPosts();
      c.fake.setKnobs({ latencyMs: 2000 });
      const keys = Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? `claim-kill-${i}-${Date.now()}` : undefined));
      const pending = keys.map((key, i) => k.ask(100 + i, key ? { 'Idempotency-Key': key } : {}));
      const text = c.queues[QUEUES.text];
      await waitFor('8 jobs inside their provider calls', async () => (await text.getJobCounts('active')).active === 8 && k.upstreamPosts() - before === 8, 15_000);
      const active = await text.getActive();
      const locks = await Promise.all(active.map((j) => c.conn.get(`${PREFIX}:${QUEUES.text}:${j.id}:lock`)));
      const claimed = locks.filter((l) => l?.includes(':claim:')).length;
      checks.that(claimed === 8, `jobs claimed at enqueue: ${claimed} of 8 (locks ${JSON.stringify(locks)})`);
      const waited = (await text.getJobCounts('waiting')).waiting;
      checks.that(waited === 0, `jobs waiting in the queue: ${waited}`);

      const { replies, cut } = await killOneMidCall(k, pending);
      const cutKeyed = cut.filter((i) => keys[i]).length;
      const audit = await settledAudit(c.db, 30_000);

      const warmIds = warm.map((r) => String(r.json?.id));
      const ids = (await c.db.generation.findMany({ where: { organizationId: org.organizationId, id: { notIn: warmIds } }, select: { id: true } })).map((g) => g.id);
      const { gens, failedUncharged, completed } = await endings(k, ids);
      const keyed = new Set((await c.db.idempotencyKey.findMany({ where: { organizationId: org.organizationId }, select: { generationId: true } })).map((g) => g.generationId));
      checks.that(gens.length === 8, `generations of the 8 requests: ${gens.length}`);
      const answered = new Set(replies.filter((r) => r.status === 200).map((r) => String(r.json?.id)));
      checks.that(failedUncharged.every((g) => !keyed.has(g.id)), `keyed generations ended failed: ${failedUncharged.filter((g) => keyed.has(g.id)).map((g) => g.id).join(',')}`);
      checks.that(failedUncharged.length === cut.length - cutKeyed, `unkeyed cut requests ${cut.length - cutKeyed}, generations failed and released ${failedUncharged.length}`);
      checks.that(completed.length === 8 - failedUncharged.length, `completed and charged: ${completed.length}; statuses ${gens.map((g) => g.status).join(',')}`);
      checks.that([...answered].every((id) => completed.some((g) => g.id === id)), 'a 200 reply whose generation is not completed and charged');
      const upstream = k.upstreamPosts() - before;
      checks.that(upstream === 8 + cutKeyed, `upstream calls for the 8 requests: ${upstream}, expected ${8 + cutKeyed} (a second call for each cut keyed request only)`);
      await checkNothingReserved(k);
      return {
        audit,
        holds: `8 jobs claimed at enqueue (claim tokens on their locks, none waiting in the queue); one process SIGKILLed inside their provider calls: ${cut.length} replies cut (${cutKeyed} keyed); its jobs re-run by the survivor after their locks lapsed: the ${cutKeyed} keyed completed and were charged once (a second upstream call each), the ${cut.length - cutKeyed} others ended failed and released (no second call); the survivor's ${8 - cut.length} answered 200; ${upstream} upstream calls; no job, reservation or money left over`,
      };
    },
  ));
