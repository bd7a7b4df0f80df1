import type { Audit } from './audit';
import { MODELS, PREFIX, type Cluster, type SeededOrg } from './cluster';
import { post, Tally, type Reply } from './http';
import { ledgerBatchesWaiting, lockOrganization, type RowLock } from './locks';
import { Checks } from './report';
import { childrenOf, killChild, startNpmStart, type NpmStart } from './processes';
import { queueIdle, queueSettled, waitFor } from './wait';
import { QUEUES } from '../../../shared/queue/queue-names';
import type { Job } from 'bullmq';

/** What a process-kill case (15-19) and the outage under streams (21) work with: `npm start` with two processes, an organization, its requests. */
export interface KillCase {
  c: Cluster;
  checks: Checks;
  tally: Tally;
  npm: NpmStart;
  /** The processes `npm start` forked first (the ones a case kills). */
  first: number[];
  org: SeededOrg;
  /** POST /v1/responses for the organization, input `<prefix> <i>`; extra headers (an Idempotency-Key); `base` the origin (`npm.url`). */
  ask(i: number, headers?: Record<string, string>, base?: string): Promise<Reply>;
  /**
   * `npm.url` at a loopback address not used before (127.0.0.2, .3, ...): a fresh origin, so fetch's pool has no
   * connection to it and every request opens its own, accepted by whichever process is running (`burstOnBoth`).
   */
  freshOrigin(): string;
  /** The organization's settlement journal in Redis: a hash of the settlements promised, by generation id. */
  journal: string;
  /** Requests the fake provider has taken (POSTs). */
  upstreamPosts(): number;
  /** Reservation leases held, by any process. */
  leasesHeld(): Promise<number>;
  /**
   * Waits until the earlier requests' jobs have ended. A reply goes out before its settlement commits and its job
   * stays active until then (shared/billing/ending.ts endGeneration): a row lock taken sooner would hold that
   * settlement and its job too.
   */
  settled(): Promise<void>;
  /** Locks the organization's row from outside (released when the case ends, if the case has not). */
  lockOrganization(): Promise<RowLock>;
  /** Waits until `npm start` has replaced the `n` first processes that were killed. */
  replaced(n: number, timeoutMs?: number): Promise<void>;
}

/** What the case tells the frame when its own checks are done: the money audit and the report row's "holds". */
export interface KillCaseEnd {
  audit: Pick<Audit, 'problems' | 'lost'>;
  holds: string;
}

/**
 * Runs a process-kill case: starts `npm start` (WEB_CONCURRENCY=2, the case's `env` over the cluster's) on the cluster,
 * seeds an organization (100 RUB), runs `body`, then ends as every such case does: 4 requests after the replacement
 * answer 200, SIGTERM stops all (exit 0), the audit's problems and the checks are reported (the log's tail on a
 * failure), and the case fails on any.
 */
export async function runKillCase(
  c: Cluster,
  o: { name: string; injected: string; input: string; env?: Record<string, string> },
  body: (k: KillCase) => Promise<KillCaseEnd>,
): Promise<void> {
  const checks = new Checks(o.name, o.injected);
  const tally = new Tally();
  const npm = await startNpmStart(c, 2, o.env);
  const locks: RowLock[] = [];
  try {
    const first = childrenOf(npm.parent.pid!);
    const org = await c.seed({ balance: '100' });
    const ask = (i: number, headers: Record<string, string> = {}, base = npm.url) => post(`${base}/v1/responses`, { model: MODELS.chat, input: `${o.input} ${i}`, max_output_tokens: 32 }, { ...org.auth, ...headers }, 30_000);
    let origins = 1;
    const journal = `${c.env.QUEUE_PREFIX}:settling:${org.organizationId}`;
    const k: KillCase = {
      c,
      checks,
      tally,
      npm,
      first,
      org,
      ask,
      freshOrigin: () => npm.url.replace('127.0.0.1', `127.0.0.${++origins}`),
      journal,
      upstreamPosts: () => c.fake.requests.filter((r) => r.method === 'POST').length,
      leasesHeld: async () => (await c.db.$queryRawUnsafe<Array<{ n: number }>>(`SELECT COUNT(*)::int AS n FROM reservations WHERE expires_at IS NOT NULL AND status = 'held'`))[0]!.n,
      settled: () => waitFor('the earlier requests settled', async () => (await queueIdle(c.queues[QUEUES.text])) && (await c.conn.hlen(journal)) === 0, 15_000),
      lockOrganization: async () => {
        const lock = await lockOrganization(c.pg.url, org.organizationId);
        locks.push(lock);
        return lock;
      },
      replaced: (n, timeoutMs = 30_000) =>
        waitFor(`${n} replacement process(es)`, async () => {
          const now = childrenOf(npm.parent.pid!);
          return now.filter((p) => !first.includes(p)).length === n && now.length === 2;
        }, timeoutMs),
    };
    const end = await body(k);

    const after = await Promise.all(Array.from({ length: 4 }, (_, i) => ask(200 + i)));
    tally.addAll(after);
    checks.that(after.every((r) => r.status === 200), `after the replacement: ${after.map((r) => r.status).join(',')}`);
    const code = await npm.stop();
    checks.that(code === 0, `parent exit on SIGTERM: ${code}`);
    const failures = checks.finishAudited(end.audit, { requests: tally.total, errors: tally.errors(), holds: `${end.holds}; SIGTERM stopped all (exit ${code})` });
    if (failures.length) console.error(npm.tail());
    expect(failures).toEqual([]);
  } finally {
    for (const lock of locks) await lock.release().catch(() => undefined);
    npm.kill();
  }
}

/**
 * Each process of `npm start` takes a lease of the case's organization (cases 18 and 19), one process at a time: the
 * other is stopped (SIGSTOP), so the requests, sent through a fresh origin, go to this one, until a lease taken since its
 * turn began is held (a count of leases alone could be one process's old and new lease while the other holds none).
 */
export async function warmBothProcesses(k: KillCase): Promise<void> {
  const serving = childrenOf(k.npm.parent.pid!);
  k.checks.that(serving.length === 2, `processes of npm start: ${serving.length}`);
  for (const [h, pid] of serving.entries()) {
    const other = serving[1 - h]!;
    const since = new Date();
    const taken = async () => (await k.c.db.$queryRawUnsafe<Array<{ n: number }>>(
      `SELECT COUNT(*)::int AS n FROM reservations WHERE expires_at IS NOT NULL AND status = 'held' AND created_at >= $1`, since))[0]!.n;
    process.kill(other, 'SIGSTOP');
    try {
      const base = k.freshOrigin();
      let sent = 0;
      // A request finding no lease takes one in the background; the next ones draw from it.
      while ((await taken()) === 0 && sent < 24) {
        const warm = await k.ask(1000 * (h + 1) + sent++, {}, base);
        k.tally.add(warm);
        k.checks.that(warm.status === 200, `warm-up of process ${pid}: ${warm.status}`);
      }
      k.checks.that((await taken()) > 0, `process ${pid} took no lease in ${sent} requests`);
    } finally {
      process.kill(other, 'SIGCONT');
    }
  }
}

/**
 * SIGKILLs every first process while their ledger group commits wait on the organization's row lock, then ends those
 * backends, so PostgreSQL commits none of them (cases 15 and 19). Returns how many batches waited.
 */
export async function killWhileBatchesWait(k: KillCase): Promise<number> {
  const { c, npm, first } = k;
  const waiting = () => ledgerBatchesWaiting(c.db);
  await waitFor('ledger group commits waiting on the row lock', async () => (await waiting()).length > 0, 10_000).catch(() => undefined);
  const backends = await waiting();
  k.checks.that(backends.length > 0, 'no ledger group commit waited on the row lock');
  for (const p of first) process.kill(p, 'SIGKILL');
  await waitFor('the killed processes gone', async () => childrenOf(npm.parent.pid!).every((p) => !first.includes(p)), 10_000);
  await c.db.$queryRawUnsafe(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, backends);
  await waitFor('their backends gone', async () => (await waiting()).every((p) => !backends.includes(p)), 10_000);
  return backends.length;
}

/**
 * The promise checks of cases 15 and 19, once the re-runs have kept the promises: every replied generation completed
 * and charged exactly the cost its reply showed, settled once; no second provider call (`upstream`, the calls since
 * the replied requests went out); no promise left in Redis.
 */
export async function checkPromisesKept(k: KillCase, replies: Reply[], upstream: number): Promise<void> {
  const { c, checks, org } = k;
  const ids = replies.map((r) => String(r.json?.id));
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
  checks.that(upstream === ids.length, `upstream calls for the ${ids.length} replied requests: ${upstream} (a re-run must not call the provider again)`);
  // A re-run keeps a promise by committing its close, sending its reply again, then erasing it: the erase may land a
  // moment after the commit the checks above saw.
  const promised = () => c.conn.hlen(k.journal);
  await waitFor('the kept promises erased', async () => (await promised()) === 0, 10_000).catch(() => undefined);
  const promisedAfter = await promised();
  checks.that(promisedAfter === 0, `promises left in Redis: ${promisedAfter}`);
}

/** A burst of text requests inside their provider calls, held by both processes (`burstOnBoth`). */
export interface Burst {
  pending: Array<Promise<Reply>>;
  /** Their jobs (job id = generation id), their lock tokens, and the ids of those drawn from a lease. */
  jobs: Job[];
  locks: Array<string | null>;
  drawn: Set<string>;
  /** Upstream calls before this burst went out. */
  before: number;
  /** Bursts sent before it that one process held alone (let finish, their replies tallied). */
  retried: number;
}

/**
 * Sends `n` text requests (a provider latency set) so that both processes of `npm start` hold some, and waits until all
 * are inside their provider calls. `npm start` lets the kernel hand each new connection to either process (SCHED_NONE),
 * so a burst left to it may land on one process alone, and then killing one tests nothing. So each half goes out while
 * the other process is SIGSTOPped (it accepts nothing), on a fresh origin (no pooled connection to the stopped one):
 * `send(round, indexes, base)` sends the requests of `indexes` to `base`. The second half's wait is short next to a job
 * lock (its process's calls are already inside the provider). A burst `usable` refuses is let finish, its replies
 * tallied and its jobs settled, and another is sent, up to `rounds` bursts. Each process's jobs carry its own worker's
 * id in their lock tokens (`<worker id>:claim:<n>`: shared/queue/claims.ts), one text worker per process.
 */
export async function burstOnBoth(
  k: KillCase,
  n: number,
  send: (round: number, indexes: number[], base: string) => Array<Promise<Reply>>,
  usable: (b: Burst) => boolean = () => true,
  rounds = 6,
): Promise<Burst> {
  const { c, checks } = k;
  const text = c.queues[QUEUES.text];
  const half = Math.ceil(n / 2);
  const halves = [Array.from({ length: half }, (_, i) => i), Array.from({ length: n - half }, (_, i) => half + i)];
  for (let round = 0; ; round++) {
    // The earlier requests' jobs ended first: a job stays active until its settlement commits, and one of a process
    // stopped below would stay active (and counted) until that process runs again.
    await k.settled();
    const before = k.upstreamPosts();
    const serving = childrenOf(k.npm.parent.pid!);
    checks.that(serving.length === 2, `processes of npm start: ${serving.length}`);
    const pending: Array<Promise<Reply>> = [];
    for (const [h, indexes] of halves.entries()) {
      const stopped = serving[1 - h]!;
      process.kill(stopped, 'SIGSTOP');
      try {
        // One request at a time, each inside its provider call before the next goes: a request of an organization with
        // nothing of its own waiting is claimed at enqueue by the process that took it. Sent together, the later ones
        // wait in the queue for a fetch, and the stopped process's blocked fetch may be the one Redis wakes.
        const base = k.freshOrigin();
        for (const i of indexes) {
          pending.push(...send(round, [i], base));
          const sent = pending.length;
          let seen = '';
          const inside = async () => {
            const counts = await text.getJobCounts('active', 'waiting', 'prioritized', 'delayed', 'completed', 'failed');
            seen = `${JSON.stringify(counts)}, upstream calls ${k.upstreamPosts() - before}`;
            return counts.active === sent && k.upstreamPosts() - before === sent;
          };
          await waitFor(`${sent} jobs inside their provider calls`, inside, 15_000).catch((e: Error) => {
            throw new Error(`${e.message} (${seen}; process ${stopped} stopped)`);
          });
        }
      } finally {
        process.kill(stopped, 'SIGCONT');
      }
    }
    const jobs = await text.getActive();
    const locks = await Promise.all(jobs.map((j) => c.conn.get(`${PREFIX}:${QUEUES.text}:${j.id}:lock`)));
    const drawn = new Set(jobs.filter((j) => (j.data as { drawn?: boolean }).drawn === true).map((j) => String(j.id)));
    const burst = { pending, jobs, locks, drawn, before, retried: round };
    const workers = new Set(locks.map((l) => l?.split(':')[0]));
    if ((workers.size >= 2 && usable(burst)) || round + 1 >= rounds) {
      checks.that(workers.size >= 2, `a burst held by both processes in ${rounds} tries (workers ${[...workers].join(',')})`);
      return burst;
    }
    const replies = await Promise.all(pending);
    k.tally.addAll(replies);
    checks.that(replies.every((r) => r.status === 200), `a burst held by one process: ${replies.map((r) => r.status).join(',')}`);
  }
}

/**
 * SIGKILLs one first process while the `pending` requests are held inside their provider calls (the fake's
 * `holdReplies`), lets the calls go once it is gone, then waits for its replacement and for the text queue to settle
 * (cases 17 and 18). Checks that it held some of the requests but not all,
 * cut as connection errors; returns the replies and the indexes of the cut ones.
 */
export async function killOneMidCall(k: KillCase, pending: Array<Promise<Reply>>): Promise<{ replies: Reply[]; cut: number[] }> {
  const { c, checks } = k;
  await killChild(k.npm.parent.pid!, k.first[0]!);
  // The calls held by the provider (`holdReplies`) end: the survivor's answer, the killed process's reach nobody.
  c.fake.setKnobs({});
  const replies = await Promise.all(pending);
  k.tally.addAll(replies);
  const cut = replies.flatMap((r, i) => (r.status !== 200 ? [i] : []));
  checks.that(cut.length > 0 && cut.length < replies.length, `replies: ${replies.map((r) => r.status).join(',')} (the killed process should hold some, not all)`);
  checks.that(cut.every((i) => replies[i]!.status === 0), `cut replies that were not connection errors: ${cut.map((i) => replies[i]!.status).join(',')}`);
  await k.replaced(1);
  const counts = await queueSettled(c.queues[QUEUES.text], 40_000);
  checks.that(Object.values(counts).every((v) => v === 0), `text jobs left: ${JSON.stringify(counts)}`);
  return { replies, cut };
}

/** The organization holds no reserved money. */
export async function checkNothingReserved(k: KillCase): Promise<void> {
  const o = await k.c.db.organization.findUniqueOrThrow({ where: { id: k.org.organizationId } });
  k.checks.that(Number(o.reserved) === 0, `reserved left on the organization: ${o.reserved}`);
}

/** The generations of `ids` as the kill cases judge them: failed and released (503, nothing charged), or completed and charged. */
export async function endings(k: KillCase, ids: string[]) {
  const gens = await k.c.db.generation.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, error: true, clientCost: true } });
  return {
    gens,
    failedUncharged: gens.filter((g) => g.status === 'failed' && (g.error as { code?: string } | null)?.code === 'SERVICE_UNAVAILABLE' && Number(g.clientCost) === 0),
    completed: gens.filter((g) => g.status === 'completed' && Number(g.clientCost) > 0),
  };
}
