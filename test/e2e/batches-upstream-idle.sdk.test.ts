/**
 * A batch's driver while its lines wait at a provider's own batch API (docs/batches.md "Provider batch APIs", the driver's pace): it steps
 * seldom (up to BATCH_UPSTREAM_POLL_MS apart, not BATCH_POLL_MS) and reads the lines' generations seldom, yet the lines
 * are answered at once when their chunk ends, the chunk's job waking the driver; a line that falls back to its ordinary
 * job is watched at the normal pace again, and stopped like any running line when the batch expires. Steps are counted by what each one costs PostgreSQL: the driver reads the
 * state of every line in flight from `generations` (pg_stat_user_tables, in the test's own database).
 */
import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import { batchEnded, batchUntil, jsonl, type BatchLine } from '../helpers/openai-batches';
import { createTestStack, STACK_MODELS, stackCatalog, type TestStack } from '../helpers/test-stack';
import { pause, waitFor, waitUntil } from '../helpers/until';
import { reportStats } from '../helpers/pg-stats';
import { batchPhase } from '../../fakes/batch-lines';
import { BatchDriver } from '../../api/services/batch-driver';

const POLL_MS = 100;
// Longer than any test: a chunk's job polls its provider only when a test promotes it (`pollOnceOver`), and a driver
// left at this pace would never answer, so each test ends only if the driver is woken or goes back to BATCH_POLL_MS.
const UPSTREAM_POLL_MS = 600_000;
const ENV = { BATCH_POLL_MS: String(POLL_MS), BATCH_UPSTREAM_POLL_MS: String(UPSTREAM_POLL_MS), BATCH_UPSTREAM_GATHER_MS: '300' };

/** The stack's OpenAI chat model, its endpoint with batch prices at half the regular ones. */
const withBatchPrices = (fakeUrl: string) => {
  const m = stackCatalog(fakeUrl).models[STACK_MODELS.chat];
  const half = (p: Record<string, number | string>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, String(Number(v) / 2)]));
  return { models: { [STACK_MODELS.chat]: { ...m, endpoints: m.endpoints.map((e) => ({ ...e, batch: { price: half(e.price) } })) } } };
};

const chatLine = (i: number, text = `batch line ${i}`): BatchLine => ({
  custom_id: `req-${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: STACK_MODELS.chat, messages: [{ role: 'user', content: text }], max_tokens: 32 },
});

describe('a batch driver while its lines wait at the provider\'s batch API', () => {
  let s: TestStack;
  let client: OpenAI;

  beforeAll(async () => {
    s = await createTestStack({ env: ENV, catalogOverrides: withBatchPrices });
    const org = await s.seed({ balance: '1000' });
    client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => s.close());
  beforeEach(() => s.fake.reset());

  async function start(lines: BatchLine[]): Promise<string> {
    const file = await client.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'input.jsonl'), purpose: 'batch' });
    return (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id;
  }

  /** Reads of the `generations` table so far (each driver step reads its lines' states there), as PostgreSQL counts them. */
  async function generationReads(): Promise<number> {
    await reportStats(s.t.pool);
    const [r] = await s.t.db.$queryRaw<Array<{ n: bigint }>>`SELECT seq_scan + coalesce(idx_scan, 0) AS n FROM pg_stat_user_tables WHERE relname = 'generations'`;
    return Number(r.n);
  }

  /** The batch's only chunk, once its job has sent it upstream, and when the batch and the chunk ended. */
  const chunkRunning = (batchId: string) => waitUntil(async () => (await s.t.db.upstreamBatch.findFirst({ where: { batchId, status: 'running' } })) ?? undefined, 20_000);

  /**
   * The chunk's job polls now, once its upstream batch is over at the provider: as a poll of its own (every
   * UPSTREAM_POLL_MS) may come at any moment, here one between two of the driver's idle steps. A chunk whose first
   * poll, right after it was sent, found it over has ended already.
   */
  async function pollOnceOver(chunk: { id: string }): Promise<void> {
    await waitFor("the provider's batch to be over", () => [...s.fake.openaiBatches.values()].some((b) => batchPhase(b, b.lines.length, Date.now()).phase === 'over'), 20_000);
    const job = (await s.ctx.queues.upstream_batches.getJob(chunk.id))!;
    const state = await waitUntil(async () => {
      const st = await job.getState();
      return ['delayed', 'completed', 'failed'].includes(st) ? st : undefined;
    }, 20_000);
    if (state === 'delayed') await job.promote();
  }
  async function endings(batchId: string): Promise<{ chunkEnded: number; batchEnded: number }> {
    const chunk = await s.t.db.upstreamBatch.findFirstOrThrow({ where: { batchId } });
    const b = await s.t.db.batch.findUniqueOrThrow({ where: { id: batchId } });
    return { chunkEnded: chunk.endedAt!.getTime(), batchEnded: b.completedAt!.getTime() };
  }

  it('steps far less often than BATCH_POLL_MS while every line is in a chunk at the provider, and answers the lines as soon as the chunk ends', async () => {
    const batchMs = 12_000;
    s.fake.setKnobs({ batchMs });
    const id = await start(Array.from({ length: 6 }, (_, i) => chatLine(i)));
    const chunk = await chunkRunning(id);
    const before = await generationReads();
    const windowMs = 6_000;
    await pause(windowMs); // a window: how often the driver steps in it
    const reads = (await generationReads()) - before;
    // At BATCH_POLL_MS the driver would have stepped about windowMs / POLL_MS = 60 times (each step one read at least).
    expect(reads).toBeLessThan(windowMs / POLL_MS / 4);

    // Woken by the chunk's job: the driver waits in the delayed set, its next step of its own put ten minutes away.
    const driver = (await s.ctx.queues.batches.getJob(id))!;
    await waitUntil(async () => ((await driver.isDelayed()) && (await driver.changeDelay(600_000).then(() => true, () => false)) ? true : undefined), 20_000);
    await pollOnceOver(chunk);
    const b: Batch = await batchUntil(client, id, batchEnded, 30_000);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toEqual({ total: 6, completed: 6, failed: 0 });
    expect(s.fake.batchStats).toMatchObject({ created: 1, linesRun: 6 });
    const t = await endings(id);
    expect(t.batchEnded).toBeGreaterThanOrEqual(t.chunkEnded);
  }, 60_000);

  it('watches a line that fell back to its ordinary job at the normal pace: answered soon after that job ends', async () => {
    // The line marked fails retryably in the provider's batch: its ordinary job calls the provider directly, `latencyMs`
    // long. The batch is over by the chunk's first poll (`latencyMs` long too).
    const latencyMs = 3_000;
    const batchMs = 500;
    s.fake.setKnobs({ batchMs, latencyMs, batchLineErrors: { '[fail-500]': 500 } });
    const id = await start([chatLine(0), chatLine(1, 'retry me [fail-500]')]);
    const chunk = await chunkRunning(id);
    // Every step begun once the chunk has ended sees no line parked: its waits go back to BATCH_POLL_MS (BatchDriver.run).
    const step = BatchDriver.prototype.step;
    const steps: Array<{ at: number; result: Promise<{ more: boolean; idle?: boolean }> }> = [];
    const spy = jest.spyOn(BatchDriver.prototype, 'step').mockImplementation(function (this: BatchDriver, batchId: string) {
      const result = step.call(this, batchId);
      steps.push({ at: Date.now(), result });
      return result;
    });
    await pollOnceOver(chunk);
    const b = await batchUntil(client, id, batchEnded, 40_000);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    expect(s.fake.requests.filter((r) => r.method === 'POST' && r.path === '/openai/v1/chat/completions')).toHaveLength(1);
    // The chunk ends as the line's job starts; the driver, woken, sees a line no longer parked and steps at BATCH_POLL_MS.
    const t = await endings(id);
    expect(t.batchEnded).toBeGreaterThanOrEqual(t.chunkEnded);
    spy.mockRestore();
    const after = await Promise.all(steps.filter((x) => x.at > t.chunkEnded).map((x) => x.result));
    expect(after.at(-1)).toMatchObject({ more: false });
    expect(after.filter((x) => x.idle)).toEqual([]);
  }, 60_000);

  it('stops a line that fell back to its ordinary job when the batch expires: answered batch_expired, uncharged', async () => {
    // The marked line fails retryably in the provider's batch; its direct call would then answer after 8 s (within the
    // provider timeout, so without the stop it would complete and be charged).
    const slowMs = 8_000;
    s.fake.setKnobs({ batchMs: 300, batchLineErrors: { '[fail-500]': 500 }, markerLatencyMs: { '[fail-500]': slowMs } });
    const id = await start([chatLine(0), chatLine(1, 'retry me [fail-500]')]);
    await pollOnceOver(await chunkRunning(id));
    const direct = () => s.fake.requests.filter((r) => r.method === 'POST' && r.path === '/openai/v1/chat/completions');
    await waitUntil(async () => (direct().length === 1 ? true : undefined), 30_000);
    await s.t.db.batch.update({ where: { id }, data: { expiresAt: new Date(Date.now() - 1_000) } });
    const b = await batchUntil(client, id, batchEnded, 20_000);
    expect(b.status).toBe('expired');
    expect(b.request_counts).toEqual({ total: 2, completed: 1, failed: 1 });
    const lines = async (fileId: string | null | undefined) => (fileId ? (await (await client.files.content(fileId)).text()).split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
    const [out, errors] = [await lines(b.output_file_id), await lines(b.error_file_id)];
    expect(out.map((l) => l.custom_id)).toEqual(['req-0']);
    expect(errors).toEqual([expect.objectContaining({ custom_id: 'req-1', response: expect.objectContaining({ status_code: 408 }), error: expect.objectContaining({ code: 'batch_expired' }) })]);
    // The direct call was cut, and the line's generation cancelled with nothing charged.
    // Cut by us before its answer (8 s away): the provider saw its caller leave.
    await waitUntil(async () => (s.fake.aborted.includes(direct()[0]!) ? true : undefined), 10_000);
    const gen = await s.t.db.generation.findFirstOrThrow({ where: { id: errors[0].response.request_id } });
    expect(gen.status).toBe('cancelled');
    expect(Number(gen.clientCost)).toBe(0);
    expect(await s.t.db.ledgerEntry.count({ where: { generationId: gen.id, kind: 'charge' } })).toBe(0);
  }, 60_000);
});
