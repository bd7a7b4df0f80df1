/**
 * Case 18. Reservation leases (docs/architecture.md "Leases", shared/billing/leases.ts): each process of `npm start`
 * holds a lease for the caller after its first requests, and grants the next ones from it in memory, calling their
 * providers while their records commit. Here one of the two processes (WEB_CONCURRENCY=2) is SIGKILLed while 8 such
 * requests are inside their provider calls (2 s).
 * What must hold: the requests were granted from leases (their reservation entries move no money); the killed
 * process's jobs are re-run by the survivor, find no outcome and end failed, uncharged, with no second provider call;
 * the survivor's requests answer 200, charged once; the killed process's lease is released by the reaper once it
 * expires (LEASE_TTL_MS); nothing is left held, reserved, queued or lost.
 */
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster } from './helpers/cluster';
import { post, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { childrenOf, startNpmStart } from './helpers/processes';
import { queueSettled, waitFor } from './helpers/wait';
import { QUEUES } from '../../shared/queue/queue-names';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'lease-kill' });
});
afterAll(async () => {
  await c?.close();
});

it('18. requests granted from leases, their process SIGKILLed mid-call: re-run uncharged, the lease released by the reaper, nothing lost', async () => {
  const checks = new Checks(
    '18. reservation leases, process SIGKILL',
    'npm start, WEB_CONCURRENCY=2; both processes hold a lease for the caller after a warm-up; 8 text requests granted from the leases; one process SIGKILLed inside their provider calls (2 s)',
  );
  const tally = new Tally();
  const { parent, url, tail, kill, stop } = await startNpmStart(c, 2);
  try {
    const first = childrenOf(parent.pid!);
    const org = await c.seed({ balance: '100' });
    const ask = (i: number) => post(`${url}/v1/responses`, { model: MODELS.chat, input: `leased ${i}`, max_output_tokens: 32 }, org.auth, 30_000);
    const leasesHeld = async () => (await c.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM reservations WHERE expires_at IS NOT NULL AND status = 'held'`))[0]!.n;
    // Warm-up in pairs, so that both processes serve some and each takes a lease.
    for (let i = 0; i < 6; i++) {
      const warm = await Promise.all([ask(2 * i), ask(2 * i + 1)]);
      tally.addAll(warm);
      checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);
    }
    const held = await leasesHeld();
    checks.that(held >= 1, `leases held after the warm-up: ${held}`);

    const posts = () => c.fake.requests.filter((r) => r.method === 'POST').length;
    const before = posts();
    c.fake.setKnobs({ latencyMs: 2000 });
    const pending = Array.from({ length: 8 }, (_, i) => ask(100 + i));
    const text = c.queues[QUEUES.text];
    await waitFor('8 jobs inside their provider calls', async () => (await text.getJobCounts('active')).active === 8 && posts() - before === 8, 15_000);
    const ids = (await text.getActive()).map((j) => j.id!);
    await waitFor('their records committed', async () => (await c.db.generation.count({ where: { id: { in: ids } } })) === 8, 10_000);
    const drawn = (await c.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM ledger_entries WHERE kind = 'reserve' AND reserved_delta = 0 AND generation_id = ANY ($1)`, ids))[0]!.n;
    checks.that(drawn >= 4, `requests granted from a lease: ${drawn} of 8`);

    process.kill(first[0]!, 'SIGKILL');
    const replies = await Promise.all(pending);
    tally.addAll(replies);
    c.fake.setKnobs({});
    const cut = replies.filter((r) => r.status !== 200);
    checks.that(cut.length > 0 && cut.length < 8, `replies: ${replies.map((r) => r.status).join(',')} (the killed process should hold some, not all)`);
    checks.that(cut.every((r) => r.status === 0), `cut replies that were not connection errors: ${cut.map((r) => r.status).join(',')}`);

    await waitFor('the killed process replaced', async () => childrenOf(parent.pid!).filter((p) => !first.includes(p)).length === 1 && childrenOf(parent.pid!).length === 2, 30_000);
    const counts = await queueSettled(text, 40_000);
    checks.that(Object.values(counts).every((v) => v === 0), `text jobs left: ${JSON.stringify(counts)}`);
    // The killed process's lease goes once it expires (LEASE_TTL_MS 5 s in this suite, the reaper every second); the
    // survivor gives its own back once idle.
    await waitFor('no lease left held', async () => (await leasesHeld()) === 0, 20_000).catch(() => undefined);
    const left = await leasesHeld();
    checks.that(left === 0, `leases still held: ${left}`);
    const a = await settledAudit(c.db, 30_000);

    const gens = await c.db.generation.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, error: true, clientCost: true } });
    const answered = new Set(replies.filter((r) => r.status === 200).map((r) => String(r.json?.id)));
    const failedUncharged = gens.filter((g) => g.status === 'failed' && (g.error as { code?: string } | null)?.code === 'SERVICE_UNAVAILABLE' && Number(g.clientCost) === 0);
    const completed = gens.filter((g) => g.status === 'completed' && Number(g.clientCost) > 0);
    checks.that(failedUncharged.length === cut.length, `cut requests ${cut.length}, generations failed and released ${failedUncharged.length}`);
    checks.that(completed.length === 8 - cut.length, `completed and charged: ${completed.length}; statuses ${gens.map((g) => g.status).join(',')}`);
    checks.that([...answered].every((id) => completed.some((g) => g.id === id)), 'a 200 reply whose generation is not completed and charged');
    const upstream = posts() - before;
    checks.that(upstream === 8, `upstream calls for the 8 requests: ${upstream} (no second call for a client that is gone)`);
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
      holds: `${held} leases after the warm-up; ${drawn} of 8 requests granted from them; one process SIGKILLed inside their provider calls: ${cut.length} replies cut, their generations re-run by the survivor and ended failed, uncharged, with no second call; the survivor's ${8 - cut.length} answered 200 and were charged once; the killed process's lease released by the reaper; ${upstream} upstream calls; nothing left held, reserved or lost; SIGTERM stopped all (exit ${code})`,
    });
    if (failures.length) console.error(tail());
    expect(failures).toEqual([]);
  } finally {
    kill();
  }
});
