/**
 * Case 25. A cancel racing a batch's last lines (docs/batches.md "Cancel"), on two API processes (each runs batch
 * drivers) and two workers. Twelve batches run at once, 8 lines in flight each; each is cancelled at its own moment,
 * timed from its progress: while its last lines are still being taken (completed ≥ total − k with k above the lines
 * in flight), while they run (k below), or the instant its last running line has ended in the database, so the cancel
 * meets the driver answering them and finishing the batch. One cancel also SIGKILLs a worker (its lines re-run on the
 * other). Every batch told `cancelling` must end `cancelled` (one whose cancel came too late, 409, `completed` with
 * every line); every line in the files answered once; a line in neither file never started (no generation, no
 * provider call, no charge); every completed line charged once; `usage.cost_rub` what the ledger charged the batch.
 */
import { settledAudit } from './helpers/audit';
import { batchGenerations, batchOf, chatLines, duplicates, ENDED, fileLines, sumCharged, upload, type BatchView } from './helpers/batches';
import { startCluster, type Cluster, type Proc, type SeededOrg } from './helpers/cluster';
import { post, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { waitFor as poll } from '../helpers/until';
import { money } from '../../shared/money';

let c: Cluster;

const LINES = 32;
const IN_FLIGHT = 8;
/** When each batch is cancelled: at completed ≥ LINES − k, or (`end`) once its last running line has ended. */
const ROUNDS: Array<{ k: number | 'end'; kill?: boolean }> = [{ k: 18 }, { k: 14 }, { k: 12 }, { k: 10 }, { k: 8 }, { k: 6, kill: true }, { k: 4 }, { k: 2 }, { k: 1 }, { k: 'end' }, { k: 'end' }, { k: 'end' }];

beforeAll(async () => {
  c = await startCluster({ name: 'batch-cancel-race', env: { SYNC_WAIT_MS: '20000', BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: String(IN_FLIGHT) } });
});
afterAll(async () => {
  await c?.close();
});

interface Round {
  k: number | 'end';
  tag: string;
  id: string;
  /** The cancel's reply: its status code and the batch's status in it. */
  cancel: { status: number; batch?: string };
  /** request_counts.completed seen when the cancel was sent, and the lines not yet taken just after it. */
  seen: number;
  untaken: number;
}

/**
 * Which of the batches' cancel moments have come, read from their rows (what request_counts shows) in one query, and
 * for the `end` ones whether every line is taken and every running one has ended (the driver's next step answers the
 * last lines and finishes).
 */
async function due(batches: Array<{ id: string; k: number | 'end' }>): Promise<Set<string>> {
  const rows = await c.db.batch.findMany({ where: { id: { in: batches.map((x) => x.id) } }, select: { id: true, status: true, completed: true, total: true, nextLine: true, inFlight: true } });
  const byId = new Map(rows.map((r) => [r.id, r]));
  const lastLines = rows.filter((r) => r.status === 'in_progress' && r.nextLine > r.total).flatMap((r) => (r.inFlight as unknown as Array<{ id: string }>).map((l) => l.id));
  const running = new Set((await c.db.generation.findMany({ where: { id: { in: lastLines }, status: { in: ['pending', 'processing'] } }, select: { id: true } })).map((g) => g.id));
  const out = new Set<string>();
  for (const x of batches) {
    const r = byId.get(x.id)!;
    if (r.status === 'validating') continue;
    const ended = r.status !== 'in_progress';
    if (x.k === 'end' ? ended || (r.nextLine > r.total && (r.inFlight as unknown as Array<{ id: string }>).every((l) => !running.has(l.id))) : ended || r.completed >= LINES - x.k) out.add(x.id);
  }
  return out;
}

async function create(api: Proc, org: SeededOrg, n: number, tally: Tally): Promise<{ id: string; tag: string }> {
  const tag = `race${n}`;
  const created = await post(`${api.url}/v1/batches`, { input_file_id: await upload(api, org, chatLines(LINES, tag)), endpoint: '/v1/chat/completions', completion_window: '24h' }, org.auth);
  tally.add(created);
  return { id: created.json.id as string, tag };
}

async function cancel(api: Proc, org: SeededOrg, x: { id: string; tag: string; k: number | 'end' }, tally: Tally): Promise<Round> {
  const reply = await post(`${api.url}/v1/batches/${x.id}/cancel`, {}, org.auth);
  tally.add(reply);
  const row = await c.db.batch.findUniqueOrThrow({ where: { id: x.id } });
  return { ...x, cancel: { status: reply.status, batch: reply.json?.status }, seen: row.completed, untaken: Math.max(0, row.total - (row.nextLine - 1)) };
}

test('cancels racing the last lines of 12 batches on 2 APIs + 2 workers, a worker SIGKILLed at one: cancelled, answered once, charged once', async () => {
  const checks = new Checks('25. batch cancel racing its last lines', `2 API + 2 worker processes; ${ROUNDS.length} chat batches of ${LINES} lines at once (${IN_FLIGHT} in flight each, provider latency 100-500 ms), each cancelled at completed ≥ ${LINES} − k for k = ${ROUNDS.filter((r) => r.k !== 'end').map((r) => r.k).join(', ')}, or (×${ROUNDS.filter((r) => r.k === 'end').length}) the instant its last running line ended; a worker SIGKILLed at the k = 6 cancel and replaced once it exited`);
  const apis = [await c.startApi(), await c.startApi()];
  const workers = [await c.startWorker(), await c.startWorker()];
  await c.warmUp(apis[0]);
  // Lines started together end apart, so the counts move line by line and each k lands among the last lines.
  c.fake.setKnobs({ latencyMs: 100, latencyJitterMs: 400 });
  const org = await c.seed({ balance: '1000' });
  const tally = new Tally();
  let replaced: Promise<unknown> | undefined;
  const kill = () => {
    workers[0].kill('SIGKILL');
    replaced = workers[0].exited.then(() => c.startWorker());
  };
  const batches = await Promise.all(ROUNDS.map(async (r, n) => ({ ...r, api: apis[n % 2], ...(await create(apis[n % 2], org, n, tally)) })));
  // Each batch cancelled the moment its own progress says, looked at every ~10 ms (a batch that never gets there is
  // reported below).
  const cancels: Array<Promise<Round>> = [];
  let pending = batches;
  const cancelDue = async () => {
    const now = await due(pending);
    for (const x of pending.filter((p) => now.has(p.id))) {
      cancels.push(cancel(x.api, org, x, tally));
      if (x.kill) kill();
    }
    pending = pending.filter((p) => !now.has(p.id));
    return pending.length === 0;
  };
  await poll('every batch at its cancel moment', cancelDue, 60_000, 10).catch(() => undefined);
  const rounds = (await Promise.all(cancels)).sort((x, y) => batches.findIndex((b) => b.id === x.id) - batches.findIndex((b) => b.id === y.id));
  checks.that(rounds.length === ROUNDS.length, `${ROUNDS.length - rounds.length} batches never reached their cancel moment`);
  await replaced;
  await waitFor('every batch ended', async () => (await Promise.all(rounds.map((x) => batchOf(apis[0], org, x.id)))).every((b) => ENDED.includes(b.status)), 40_000);
  const a = await settledAudit(c.db, 20_000);

  const calls = new Map<string, number>();
  for (const q of c.fake.requests) {
    const content = (q.body as { messages?: Array<{ content?: unknown }> } | null)?.messages?.[0]?.content;
    if (q.method === 'POST' && typeof content === 'string' && content.startsWith('race')) calls.set(content, (calls.get(content) ?? 0) + 1);
  }
  const summary: string[] = [];
  let raced = 0;
  let neverStarted = 0;
  let answeredTotal = 0;
  for (const x of rounds) {
    const b: BatchView = await batchOf(apis[1], org, x.id);
    const name = `batch k=${x.k} (${x.id})`;
    const out = await fileLines(apis[1], org, b.output_file_id);
    const errors = await fileLines(apis[1], org, b.error_file_id);
    const all = [...out, ...errors];
    const answered = new Set(all.map((l) => l.custom_id));
    const twice = duplicates(all);
    // Told `cancelling`: it ends cancelled. Too late (409: it had ended): completed, with every line.
    if (x.cancel.status === 200) {
      checks.that(x.cancel.batch === 'cancelling' || x.cancel.batch === 'cancelled', `${name}: the cancel answered ${x.cancel.batch}`);
      checks.that(b.status === 'cancelled' && b.cancelled_at !== null && b.completed_at === null, `${name}: told ${x.cancel.batch}, ended ${b.status} (cancelled_at ${b.cancelled_at}, completed_at ${b.completed_at})`);
    } else {
      checks.that(x.cancel.status === 409 && b.status === 'completed' && all.length === LINES, `${name}: the cancel answered ${x.cancel.status}; ended ${b.status} with ${all.length} of ${LINES} lines`);
    }
    checks.that(twice.length === 0, `${name}: custom_ids answered twice: ${twice.join(',')}`);
    checks.that(b.request_counts.total === LINES && b.request_counts.completed === out.length && b.request_counts.failed === errors.length, `${name}: request_counts ${JSON.stringify(b.request_counts)}, files ${out.length} + ${errors.length}`);
    checks.that(out.every((l) => l.response.status_code === 200) && errors.length === 0, `${name}: ${errors.length} error lines (${errors.slice(0, 2).map((e) => JSON.stringify(e.response)).join('; ')})`);
    // A line in neither file never started: no generation, no provider call. The generations are exactly the answered lines'.
    const gens = await batchGenerations(c.db, x.id);
    const requestIds = new Set(all.map((l) => l.response.request_id).filter((v): v is string => v !== null));
    checks.that(gens.length === requestIds.size && gens.every((g) => requestIds.has(g.id)), `${name}: ${gens.length} generations, ${requestIds.size} answered lines naming one`);
    const calledUnanswered = [...calls.keys()].filter((content) => content.startsWith(`${x.tag} `) && !answered.has(content.replace(' ', '-')));
    checks.that(calledUnanswered.length === 0, `${name}: provider called for lines in neither file: ${calledUnanswered.slice(0, 5).join(', ')}`);
    const outIds = new Set(out.map((l) => l.response.request_id!));
    checks.that(gens.every((g) => g.settlements === 1 && (outIds.has(g.id) ? g.status === 'completed' && g.charges === 1 : g.charges === 0)), `${name}: settlements/charges per generation ${[...new Set(gens.map((g) => `${g.status} ${g.settlements}/${g.charges}`))].join(',')}`);
    const row = await c.db.batch.findUniqueOrThrow({ where: { id: x.id } });
    const charged = sumCharged(gens);
    checks.that(money(row.cost).equals(charged) && Math.abs(b.usage.cost_rub - Number(charged.toFixed(6))) < 1e-9, `${name}: cost ${money(row.cost)} (usage.cost_rub ${b.usage.cost_rub}) vs the ledger's ${charged}`);
    if (x.cancel.status === 200 && x.untaken > 0) raced++;
    neverStarted += LINES - all.length;
    answeredTotal += all.length;
    summary.push(`k=${x.k}: ${x.seen} done, ${x.untaken} untaken at the cancel → ${x.cancel.status === 200 ? b.status : `409, ${b.status}`} ${all.length}/${LINES}`);
  }
  const upstream = [...calls.values()].reduce((s, v) => s + v, 0);

  // Driver jobs re-run after a stall (their process too busy to renew the lock): two runs of one driver at once.
  const stalls = (await Promise.all(rounds.map((x) => c.queues.batches.getJob(x.id)))).reduce((n, j) => n + (j?.stalledCounter ?? 0), 0);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `${summary.join('; ')}; every batch told cancelling ended cancelled, ${raced} of them with lines still untaken at the cancel; ${answeredTotal} lines answered, each custom_id once and each completed line charged once; ${neverStarted} lines never started: no generation, no provider call, no charge; worker killed ${replaced ? 'at the k = 6 cancel' : 'never'}, ${upstream} upstream calls for ${answeredTotal} lines (stalled lines re-run); every batch's cost = usage.cost_rub = the ledger's; driver jobs stalled and re-run ${stalls} times; no reservation held; ledger = balances`,
  });
  if (failures.length) console.error(c.tails());
  expect(failures).toEqual([]);
}, 150_000);
