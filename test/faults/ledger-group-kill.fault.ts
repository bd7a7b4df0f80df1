/**
 * Case 14. `npm start` with WEB_CONCURRENCY=2: each process is API + workers and settles money through
 * group-committed `sy_ledger_group` calls (shared/billing/ledger.ts): reservations of new requests (opens) and
 * settlements of finished jobs (closes). One process is SIGKILLed while its groups, carrying opens and closes,
 * wait in PostgreSQL on the organization's row lock (taken from outside); then the lock goes.
 * What must hold: the parent replaces the killed process and the survivor keeps serving; the killed process's
 * jobs are re-run and settled by a live one; whatever its dead transactions do (PostgreSQL finishes and commits
 * a statement whose client is gone once the lock is free: the reaper then releases the orphaned reservations),
 * every generation is settled exactly once, every completed one charged, no money lost or left reserved; the
 * replies that came back are 200 with the cost the history records; SIGTERM stops the parent.
 */
import fs from 'node:fs';
import { settledAudit } from './helpers/audit';
import { MODELS, PREFIX, startCluster, type Cluster } from './helpers/cluster';
import { post, Tally, type Reply } from './helpers/http';
import { Checks } from './helpers/report';
import { childrenOf, killChild, listensOn, startNpmStart, tcpSocketsOf } from './helpers/processes';
import { waitFor as poll } from '../helpers/until';
import { queueSettled, waitFor } from './helpers/wait';
import { lockOrganization, type RowLock } from './helpers/locks';

let c: Cluster;

beforeAll(async () => {
  // A sync request whose job the killed process ran waits for its re-run (stall detection + provider latency).
  c = await startCluster({ name: 'ledger-group-kill', env: { SYNC_WAIT_MS: '40000' } });
});
afterAll(async () => {
  await c?.close();
});


it('14. a process SIGKILLed while its ledger group commit (opens and closes) waits on a row lock: nothing lost, settled once', async () => {
  const checks = new Checks(
    '14. ledger group commit SIGKILL',
    'WEB_CONCURRENCY=2; the organization row locked from outside while 12 jobs finish and 12 new requests arrive, so each process\'s sy_ledger_group calls (their closes and opens) wait in PostgreSQL; one process SIGKILLed there; then the lock released',
  );
  const tally = new Tally();
  const { parent, url, tail, kill, stop } = await startNpmStart(c, 2);
  const locks: RowLock[] = [];
  try {
    const first = childrenOf(parent.pid!).sort((a, b) => a - b);

    const org = await c.seed({ balance: '100' });
    // A second organization whose row lock holds each process's group commit while the first one's items queue up
    // behind it: they then go out as one group (opens and closes together where one Ledger serves the API and the
    // workers of a process) instead of one item first and the rest after.
    const gate = await c.seed({ balance: '100' });
    const ask = (o: typeof org, i: number) => post(`${url}/v1/responses`, { model: MODELS.chat, input: `ledger kill ${i}`, max_output_tokens: 32 }, o.auth, 40_000);
    const warm = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(org, i)));
    tally.addAll(warm);
    checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);
    // Its replies went out on promises; their closes commit after them. One still queued when the row is locked waits
    // there too, and holds its process's group commit behind the organization instead of the gate below.
    const endedOf = (o: typeof org) => c.db.generation.count({ where: { organizationId: o.organizationId, status: { notIn: ['pending', 'processing'] } } });
    await waitFor('the warm-up settled', async () => (await endedOf(org)) === warm.length && (await c.conn.hlen(`${PREFIX}:settling:${org.organizationId}`)) === 0, 15_000);

    // Batches waiting behind `lockPid`, by the process that sent them. A waiter queued behind another one names
    // only that one in pg_blocking_pids: follow the chain to the lock, through any waiter (a lease's take or return
    // queues on the organization's row too).
    const waiting = async (lockPid: number) => {
      const rows = await c.db.$queryRawUnsafe<Array<{ pid: number; client_port: number; blockers: number[]; grouped: boolean }>>(
        `SELECT pid, client_port, pg_blocking_pids(pid) AS blockers, query LIKE '%FROM sy_ledger_group(%' AS grouped
           FROM pg_stat_activity WHERE wait_event_type = 'Lock'`,
      );
      const behind = new Set([lockPid]);
      for (let grew = true; grew; ) {
        grew = false;
        for (const r of rows) {
          if (!behind.has(r.pid) && r.blockers.some((b) => behind.has(b))) (behind.add(r.pid), (grew = true));
        }
      }
      const ports = new Map(first.map((p) => [p, new Set(tcpSocketsOf(p).map((s) => s.port))]));
      return rows.filter((r) => r.grouped && behind.has(r.pid)).map((r) => ({ backend: r.pid, process: first.find((p) => ports.get(p)!.has(r.client_port)) }));
    };
    const inBoth = async (lockPid: number) => new Set((await waiting(lockPid)).map((w) => w.process).filter(Boolean)).size === 2;

    // Wave 1: inside its provider call, its reservations committed, held there until wave 2 waits in both processes
    // (a close that came earlier, when the machine is slow, would hold its process's group commit behind the
    // organization's row, and that process's gate requests below would never reach PostgreSQL).
    c.fake.setKnobs({ holdReplies: true });
    const posts = () => c.fake.requests.filter((r) => r.method === 'POST').length;
    const upstreamBefore = posts();
    const wave1 = Array.from({ length: 12 }, (_, i) => ask(org, 100 + i));
    await waitFor('wave 1 inside its provider calls', async () => (await c.queues.text.getActiveCount()) >= 12 && posts() >= upstreamBefore + 12);

    // Both rows locked.
    const orgLock = await lockOrganization(c.pg.url, org.organizationId);
    locks.push(orgLock);
    const gateLock = await lockOrganization(c.pg.url, gate.organizationId);
    locks.push(gateLock);
    // Each step below that needs both processes to take part runs once per process, with the other SIGSTOPped (it
    // accepts nothing) and on an origin of its own (no pooled connection to the stopped one): left to the kernel and
    // to pooled connections, every request may land on one process, and then the other has nothing queued.
    const apiPort = Number(new URL(url).port);
    const accepted = (pid: number) => tcpSocketsOf(pid).filter((s) => s.port === apiPort && !s.listening).length;
    const alone = async (h: number, step: (base: string, running: number) => Promise<unknown>) => {
      const stopped = first[1 - h]!;
      process.kill(stopped, 'SIGSTOP');
      try {
        await step(url.replace('127.0.0.1', `127.0.0.${2 + h}`), first[h]!);
      } finally {
        process.kill(stopped, 'SIGCONT');
      }
    };

    // Requests of the gate organization, to each process in turn, until it has a group waiting on the gate (up to 20
    // each, 150 ms apart: on a busy machine a process's first may take a while to reach PostgreSQL).
    const gated: Array<Promise<Reply>> = [];
    for (const h of [0, 1]) {
      await alone(h, async (base, running) => {
        let sent = 0;
        await poll(`a group of process ${running} waiting on the gate`, async () => {
          if ((await waiting(gateLock.pid)).some((w) => w.process === running)) return true;
          if (sent++ < 20) gated.push(post(`${base}/v1/responses`, { model: MODELS.chat, input: `ledger kill ${300 + gated.length}`, max_output_tokens: 32 }, gate.auth, 40_000));
          return false;
        }, 15_000, 150).catch(() => undefined);
      });
    }
    checks.that(await inBoth(gateLock.pid), `the gate organization's groups wait in ${JSON.stringify(await waiting(gateLock.pid))}`);

    // Wave 2's opens, then wave 1's closes (its provider calls let go), queue behind the gate in each process: a close
    // is queued once its settlement is promised in Redis (the reply goes out on it). Six to each process.
    const wave2: Array<Promise<Reply>> = [];
    for (const h of [0, 1]) {
      await alone(h, async (base, running) => {
        const before = accepted(running);
        for (let i = 0; i < 6; i++) wave2.push(post(`${base}/v1/responses`, { model: MODELS.chat, input: `ledger kill ${200 + 6 * h + i}`, max_output_tokens: 32 }, org.auth, 40_000));
        await waitFor(`process ${running} holding its half of wave 2`, async () => accepted(running) >= before + 6, 15_000);
      });
    }
    c.fake.setKnobs({ latencyMs: 2000 });
    await waitFor("wave 1's settlements promised", async () => (await c.conn.hlen(`${PREFIX}:settling:${org.organizationId}`)) >= 12, 30_000);
    const ended = await endedOf(org);
    checks.that(ended === warm.length, `generations of the organization ended while its row was locked: ${ended - warm.length}`);

    // The gate opens: each process's next group (the queued opens and closes) goes out and waits on the organization.
    await gateLock.release();
    await waitFor('a group of each process waiting on the organization row', () => inBoth(orgLock.pid), 10_000).catch(() => undefined);
    const blocked = await waiting(orgLock.pid);
    checks.that(new Set(blocked.map((w) => w.process).filter(Boolean)).size === 2, `the organization's groups wait in ${JSON.stringify(blocked)} (processes ${first.join(',')})`);

    // The lowest pid among the processes with a waiting group: a deterministic choice among equals.
    const victim = blocked.map((w) => w.process!).filter(Boolean).sort((a, b) => a - b)[0] ?? first[0];
    const victimBackends = blocked.filter((w) => w.process === victim).map((w) => w.backend);
    await killChild(parent.pid!, victim);
    await orgLock.release();
    // What PostgreSQL did with the dead process's statement: the backend ends once it tries to answer.
    await waitFor('the killed process\'s backends ended', async () => {
      const rows = await c.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE pid = ANY ($1::int[])`, victimBackends);
      return rows[0].n === 0;
    }, 10_000).catch(() => checks.that(false, `backends ${victimBackends.join(',')} of the killed process still open`));

    const [r1, r2, rg] = await Promise.all([Promise.all(wave1), Promise.all(wave2), Promise.all(gated)]);
    const replies = [...r1, ...r2, ...rg];
    tally.addAll(replies);
    // A reply either came (200, completed) or its connection died with the process that held it.
    checks.that(replies.every((r) => (r.status === 200 && r.json?.status === 'completed') || r.status === 0), `replies: ${tally.summary()}`);
    const cut = replies.filter((r) => r.status === 0).length;

    // The parent forks a replacement (a second later), which serves once it listens on the port.
    const port = Number(new URL(url).port);
    const replacement = () => childrenOf(parent.pid!).filter((p) => !first.includes(p));
    await waitFor('the replacement to listen', async () => replacement().some((p) => listensOn(p, port)) && childrenOf(parent.pid!).length === 2, 30_000).catch(() => undefined);
    const second = childrenOf(parent.pid!);
    checks.that(second.length === 2 && !second.includes(victim), `after the kill: processes ${second.join(',')} (killed ${victim})`);
    c.fake.setKnobs({ latencyMs: 0 });
    const after = await Promise.all(Array.from({ length: 12 }, (_, i) => ask(org, 400 + i)));
    tally.addAll(after);
    checks.that(after.every((r) => r.status === 200), `after the replacement: ${after.map((r) => r.status).join(',')}`);

    const a = await settledAudit(c.db, 30_000);
    const settlements = await c.db.$queryRawUnsafe<Array<{ n: number }>>(
      `SELECT COUNT(l.id)::int AS n FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id AND l.kind IN ('charge', 'release') GROUP BY g.id`,
    );
    checks.that(settlements.every((s) => s.n === 1), `settlements per generation: ${settlements.map((s) => s.n).join(',')}`);
    const [{ n: uncharged }] = await c.db.$queryRawUnsafe<Array<{ n: number }>>(
      `SELECT COUNT(*)::int AS n FROM generations g JOIN reservations r ON r.generation_id = g.id WHERE g.status = 'completed' AND NOT r.charged > 0`,
    );
    checks.that(uncharged === 0, `${uncharged} completed generations not charged`);
    const served = [...replies, ...after].filter((r) => r.status === 200);
    const costs = await c.db.generation.findMany({ where: { id: { in: served.map((r) => String(r.json?.id)) } }, select: { id: true, clientCost: true } });
    const costOf = new Map(costs.map((g) => [g.id, Number(g.clientCost)]));
    const wrong = served.filter((r) => costOf.get(r.json?.id) === undefined || Math.abs(costOf.get(r.json?.id)! - Number(r.json?.usage?.cost)) > 1e-9);
    checks.that(wrong.length === 0, `replies whose cost is not the history's: ${wrong.map((r) => `${r.json?.id} ${r.json?.usage?.cost} vs ${costOf.get(r.json?.id)}`).join(', ')}`);
    await queueSettled(c.queues.text, 20_000);
    const live = await c.queues.text.getJobCounts('active', 'waiting', 'delayed');
    const stillLive = live.active + live.waiting + live.delayed;
    const liveJobs = stillLive ? await c.queues.text.getJobs(['active', 'waiting', 'delayed']) : [];
    const liveGens = await c.db.generation.findMany({ where: { id: { in: liveJobs.map((j) => j.id!) } }, select: { id: true, status: true } });
    checks.that(stillLive === 0, `text queue not drained: ${JSON.stringify(live)}; jobs ${liveJobs.map((j) => `${j.id} (attempts ${j.attemptsStarted}, stalled ${j.stalledCounter}, generation ${liveGens.find((g) => g.id === j.id)?.status ?? 'not recorded'})`).join(', ')}`);

    const code = await stop();
    checks.that(code === 0, `parent exit on SIGTERM: ${code}`);
    checks.that(childrenOf(parent.pid!).length === 0 && second.every((p) => !fs.existsSync(`/proc/${p}`)), 'a child outlived the parent');

    const generations = Object.values(a.byStatus).reduce((x, y) => x + y, 0);
    const upstream = posts();
    const failures = checks.finishAudited(a, {
      requests: tally.total,
      errors: tally.errors(),
      holds: `${blocked.length} groups of the 2 processes waited on the organization row (${first.map((p) => blocked.filter((w) => w.process === p).length).join(' + ')}); one process killed there (${victimBackends.length} of them) and replaced; ${cut} replies cut with it, the others 200 with the cost the history shows; ${generations} generations (${Object.entries(a.byStatus).map(([k, v]) => `${k} ${v}`).join(', ')}; ${a.reaped} by the reaper), each settled exactly once, completed ones charged; ${upstream} upstream calls (stalled jobs re-run); no reservation held; ledger = balances; SIGTERM stopped all (exit ${code})`,
    });
    if (failures.length) console.error(tail());
    expect(failures).toEqual([]);
  } finally {
    for (const l of locks) await l.release().catch(() => undefined);
    kill();
  }
});
