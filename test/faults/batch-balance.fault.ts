/**
 * Case 24. Batches that run out of money (docs/batches.md "A batch never overspends") on several processes: two API
 * processes (each runs batch drivers) and two workers; an organization whose balance covers only part of its two
 * batches, and a key whose limit covers only part of a third. While they run the organization's and the key's money is
 * sampled straight from the database: the balance never below zero nor below what is reserved, the key never past its
 * limit. Then every custom_id must be answered exactly once, the lines refused in the error file as 402, every
 * completed line charged exactly once, each batch's cost what the ledger charged its lines, the balance lost exactly
 * the charges, and nothing left reserved.
 */
import { settledAudit } from './helpers/audit';
import { batchGenerations, batchOf, chatLines, createBatch, duplicates, ENDED, fileLines, sumCharged, upload, type BatchView, type FileLine, type LineGeneration } from './helpers/batches';
import { startCluster, type Cluster, type Proc, type SeededOrg } from './helpers/cluster';
import { Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { pause } from '../helpers/until';
import { money, ZERO, type Decimal } from '../../shared/money';

let c: Cluster;

const LINES = 200;
const BALANCE = '0.1';
const KEY_LIMIT = '0.05';

beforeAll(async () => {
  c = await startCluster({ name: 'batch-balance', env: { SYNC_WAIT_MS: '20000', BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '32' } });
});
afterAll(async () => {
  await c?.close();
});

/** The lowest money seen while the batches run, sampled from the database every ~10 ms (one query a sample). */
class Sampler {
  samples = 0;
  minBalance: Decimal | null = null;
  minFree: Decimal | null = null;
  maxKeyTaken: Decimal | null = null;
  private stopped = false;
  private done: Promise<void> | undefined;

  constructor(
    private readonly orgId: string,
    private readonly keyId: string,
  ) {}

  start(): void {
    this.done = (async () => {
      while (!this.stopped) {
        const [o] = await c.db.$queryRawUnsafe<Array<{ balance: string; reserved: string; taken: string }>>(
          `SELECT o.balance::text, o.reserved::text, (SELECT (period_spent + reserved)::text FROM api_keys WHERE id = $2) AS taken FROM organizations o WHERE o.id = $1`,
          this.orgId,
          this.keyId,
        );
        const balance = money(o.balance);
        const free = balance.minus(money(o.reserved));
        const taken = money(o.taken);
        this.minBalance = this.minBalance === null || balance.lessThan(this.minBalance) ? balance : this.minBalance;
        this.minFree = this.minFree === null || free.lessThan(this.minFree) ? free : this.minFree;
        this.maxKeyTaken = this.maxKeyTaken === null || taken.greaterThan(this.maxKeyTaken) ? taken : this.maxKeyTaken;
        this.samples++;
        await pause(10); // pacing: a sample every ~10 ms
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

interface Ran {
  b: BatchView;
  out: FileLine[];
  errors: FileLine[];
  gens: LineGeneration[];
  cost: Decimal;
}

test('batches that run out of balance or of a key limit on 2 APIs + 2 workers: answered once, charged once, never below zero', async () => {
  const checks = new Checks('24. batches out of balance', `2 API + 2 worker processes (32 lines in flight per batch, provider latency 150 ms); an organization with ${BALANCE} RUB runs two ${LINES}-line chat batches at once (each line ~0.001 RUB, reserving ~0.003), another organization's key with a ${KEY_LIMIT} RUB limit (balance ample) a third; money sampled from the database while they run`);
  const apis = [await c.startApi(), await c.startApi()];
  await c.startWorker();
  await c.startWorker();
  await c.warmUp(apis[0]);
  c.fake.setKnobs({ latencyMs: 150 });
  const poor = await c.seed({ balance: BALANCE });
  const limited = await c.seed({ balance: '1000', keyLimit: KEY_LIMIT });
  const tally = new Tally();

  const start = async (api: Proc, org: SeededOrg, tag: string) => {
    const r = await createBatch(api, org, await upload(api, org, chatLines(LINES, tag)));
    tally.add(r);
    return { api, org, id: r.json.id as string, reason: org === poor ? 'balance_insufficient' : 'key_limit_exceeded' };
  };
  // The poor organization's balance (its key has no limit), the limited key's spend (its organization's balance is ample).
  const poorSampler = new Sampler(poor.organizationId, poor.key.id);
  const keySampler = new Sampler(limited.organizationId, limited.key.id);
  poorSampler.start();
  keySampler.start();
  const batches = await Promise.all([start(apis[0], poor, 'poor-a'), start(apis[1], poor, 'poor-b'), start(apis[1], limited, 'limited')]);
  await waitFor('the three batches ended', async () => (await Promise.all(batches.map((x) => batchOf(x.api, x.org, x.id)))).every((b) => ENDED.includes(b.status)), 50_000);
  await poorSampler.stop();
  await keySampler.stop();

  const a = await settledAudit(c.db, 20_000);
  const ran: Ran[] = [];
  for (const x of batches) {
    const b = await batchOf(x.api, x.org, x.id);
    const out = await fileLines(x.api, x.org, b.output_file_id);
    const errors = await fileLines(x.api, x.org, b.error_file_id);
    const gens = await batchGenerations(c.db, x.id);
    const row = await c.db.batch.findUniqueOrThrow({ where: { id: x.id } });
    ran.push({ b, out, errors, gens, cost: money(row.cost) });
    const name = `batch ${x.id}`;
    checks.that(b.status === 'completed', `${name}: status ${b.status}`);
    const all = [...out, ...errors];
    const twice = duplicates(all);
    checks.that(all.length === LINES && new Set(all.map((l) => l.custom_id)).size === LINES && twice.length === 0, `${name}: ${all.length} lines answered, ${twice.length} custom_ids twice (${twice.slice(0, 3).join(',')}), of ${LINES}`);
    checks.that(b.request_counts.total === LINES && b.request_counts.completed === out.length && b.request_counts.failed === errors.length, `${name}: request_counts ${JSON.stringify(b.request_counts)}, files ${out.length} + ${errors.length}`);
    checks.that(out.length > 0 && errors.length > 0, `${name}: ${out.length} completed and ${errors.length} refused (both expected)`);
    const wrong = errors.filter((e) => e.response.status_code !== 402 || e.response.body.error?.code !== 'INSUFFICIENT_BALANCE' || e.response.body.error?.metadata?.reason !== x.reason || e.response.request_id !== null);
    checks.that(wrong.length === 0, `${name}: error lines not a 402 ${x.reason} without a generation: ${wrong.slice(0, 2).map((e) => JSON.stringify(e.response)).join('; ')}`);
    // A refused line reserved nothing and made no generation: the batch's generations are exactly its output lines, each charged once.
    const outIds = new Set(out.map((l) => l.response.request_id!));
    checks.that(b.request_counts.completed === out.length && out.every((l) => l.response.status_code === 200), `${name}: output lines all 200`);
    checks.that(gens.length === outIds.size && gens.every((g) => outIds.has(g.id)), `${name}: ${gens.length} generations for ${outIds.size} output lines`);
    checks.that(gens.every((g) => g.status === 'completed' && g.settlements === 1 && g.charges === 1 && g.charged.greaterThan(0)), `${name}: settlements/charges per generation ${[...new Set(gens.map((g) => `${g.status} ${g.settlements}/${g.charges}`))].join(',')}`);
    checks.that(money(row.cost).equals(sumCharged(gens)), `${name}: cost ${money(row.cost)} vs the ledger's ${sumCharged(gens)}`);
    checks.that(Math.abs(b.usage.cost_rub - Number(sumCharged(gens).toFixed(6))) < 1e-9, `${name}: usage.cost_rub ${b.usage.cost_rub} vs ${sumCharged(gens).toFixed(6)}`);
  }

  // The organizations' money: never below zero nor below what was reserved while running; what they lost is what was charged.
  const chargedTo = async (orgId: string) =>
    money((await c.db.$queryRawUnsafe<Array<{ s: string }>>(`SELECT COALESCE(-SUM(amount), 0)::text AS s FROM ledger_entries WHERE organization_id = $1 AND kind = 'charge'`, orgId))[0].s);
  const poorRow = await c.db.organization.findUniqueOrThrow({ where: { id: poor.organizationId } });
  const poorCharged = await chargedTo(poor.organizationId);
  const poorBatches = ran.slice(0, 2).reduce((s, r) => s.plus(r.cost), ZERO);
  checks.that(poorSampler.samples > 10 && poorSampler.minBalance!.greaterThanOrEqualTo(0) && poorSampler.minFree!.greaterThanOrEqualTo(0), `organization ${BALANCE}: lowest balance seen ${poorSampler.minBalance}, lowest balance − reserved ${poorSampler.minFree} (${poorSampler.samples} samples)`);
  checks.that(money(BALANCE).minus(money(poorRow.balance)).equals(poorCharged) && poorCharged.equals(poorBatches), `organization ${BALANCE}: balance ${money(poorRow.balance)}, lost ${money(BALANCE).minus(money(poorRow.balance))}, the ledger charged ${poorCharged}, its batches cost ${poorBatches}`);
  checks.that(money(poorRow.reserved).isZero(), `organization ${BALANCE}: ${money(poorRow.reserved)} still reserved`);
  const key = await c.db.apiKey.findUniqueOrThrow({ where: { id: limited.key.id } });
  const limitedRow = await c.db.organization.findUniqueOrThrow({ where: { id: limited.organizationId } });
  const keyCharged = await chargedTo(limited.organizationId);
  checks.that(keySampler.samples > 10 && keySampler.maxKeyTaken!.lessThanOrEqualTo(money(KEY_LIMIT)), `key limit ${KEY_LIMIT}: most spent + reserved seen ${keySampler.maxKeyTaken} (${keySampler.samples} samples)`);
  checks.that(money(key.usage).equals(keyCharged) && keyCharged.equals(ran[2].cost) && money('1000').minus(money(limitedRow.balance)).equals(keyCharged), `key limit ${KEY_LIMIT}: usage ${money(key.usage)}, the ledger charged ${keyCharged}, the batch cost ${ran[2].cost}, balance ${money(limitedRow.balance)}`);
  checks.that(money(key.reserved).isZero() && money(limitedRow.reserved).isZero(), `key limit: ${money(key.reserved)} still reserved on the key`);
  const upstream = c.fake.requests.filter((r) => r.method === 'POST' && JSON.stringify(r.body).match(/"(poor-a|poor-b|limited) \d+"/)).length;
  const completed = ran.reduce((s, r) => s + r.out.length, 0);
  checks.that(upstream === completed, `${upstream} upstream calls for ${completed} completed lines (a refused line calls no provider)`);

  const [pa, pb, lk] = ran;
  // Driver jobs re-run after a stall (their process too busy to renew the lock): two runs of one driver at once.
  const stalls = (await Promise.all(batches.map((x) => c.queues.batches.getJob(x.id)))).reduce((n, j) => n + (j?.stalledCounter ?? 0), 0);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `organization ${BALANCE} RUB: batches of ${LINES} lines ended completed with ${pa.out.length} + ${pb.out.length} lines answered 200 and ${pa.errors.length} + ${pb.errors.length} answered 402 balance_insufficient; lowest balance seen ${poorSampler.minBalance} and balance − reserved ${poorSampler.minFree} (${poorSampler.samples} samples); charged ${poorCharged} RUB, exactly the balance lost and the batches' cost; key limit ${KEY_LIMIT} RUB: ${lk.out.length} lines 200, ${lk.errors.length} 402 key_limit_exceeded, most spent + reserved seen ${keySampler.maxKeyTaken}, charged ${keyCharged}; every custom_id answered once, each completed line's generation charged once, refused lines made no generation and no upstream call (${upstream} calls for ${completed} lines); driver jobs stalled and re-run ${stalls} times; no reservation held; ledger = balances`,
  });
  if (failures.length) console.error(c.tails());
  expect(failures).toEqual([]);
}, 120_000);
