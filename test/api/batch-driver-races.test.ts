/**
 * Races of a batch's driver (docs/batches.md), found by fault cases 24 and 25, replayed deterministically. The driver is
 * stepped by hand (the stack's own drivers are kept off the batch by pausing the `batches` queue).
 *
 * - A cancel that lands while the driver answers the last lines: committed (the client is told `cancelling`) between
 *   the step's read of the row and its move to `finalizing`. The batch must end `cancelled`, never `completed` over it.
 * - Two runs of one driver at once (a stalled job re-run by another API process while the first still runs): one run's
 *   order of a line is refused (402: the money ran out at that moment) while the other ordered it and was granted.
 *   The line must be answered from its generation, charged once, never answered as the refusal while charged.
 */
import request from 'supertest';
import { BatchDriver } from '../../api/services/batch-driver';
import { BatchSteps } from '../../api/services/batch-steps';
import type { Db } from '../../shared/db/client';
import { AppError } from '../../shared/errors/app-error';
import { money } from '../../shared/money';
import { chargesOf as chargesIn, chatLines, handDriver, linesOf as linesIn, newChatBatch as batchIn, runToEnd, stackKinds } from '../helpers/batch-driving';
import { createTestStack, type TestStack } from '../helpers/test-stack';
import { waitFor } from '../helpers/until';

let s: TestStack;

const driverOf = (db: Db = s.ctx.db, kinds = stackKinds(s)): BatchDriver => handDriver(s, { db, kinds });
const pausedBatch = (n: number, tag: string) => batchIn(s, chatLines(n, tag));
const linesOf = (auth: Record<string, string>, fileId: string | null) => linesIn(s, auth, fileId);
const chargesOf = (organizationId: string, batchId: string) => chargesIn(s, organizationId, batchId);

beforeAll(async () => {
  s = await createTestStack({ env: { BATCH_POLL_MS: '50' } });
});
afterAll(() => s.close());

/** `db` whose first `batch.updateMany` to `finalizing` runs `before` first (the race's other side). */
function racing(db: Db, before: () => Promise<void>): Db {
  let raced = false;
  const batch = new Proxy(db.batch, {
    get(target, prop, receiver) {
      if (prop !== 'updateMany') return Reflect.get(target, prop, receiver);
      return async (args: { data?: { status?: string } }) => {
        if (!raced && args.data?.status === 'finalizing') {
          raced = true;
          await before();
        }
        return target.updateMany(args as never);
      };
    },
  });
  return new Proxy(db, { get: (target, prop, receiver) => (prop === 'batch' ? batch : Reflect.get(target, prop, receiver)) });
}

it('a cancel committed while the last lines are answered ends the batch cancelled, their answers kept and charged once', async () => {
  const queue = s.ctx.queues.batches;
  await queue.pause();
  try {
    const { id, auth, organizationId } = await pausedBatch(3, 'c');
    let told: string | undefined;
    const driver = driverOf(
      racing(s.ctx.db, async () => {
        told = (await request(s.app).post(`/v1/batches/${id}/cancel`).set(auth)).body.status;
      }),
    );
    await runToEnd(driver, id);

    expect(told).toBe('cancelling');
    const b = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
    expect(b.status).toBe('cancelled');
    expect(typeof b.cancelled_at).toBe('number');
    expect(b.completed_at).toBeNull();
    // The lines had all ended: their answers are the batch's output, each charged once, the batch's cost theirs.
    expect(b.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    const out = await linesOf(auth, b.output_file_id);
    expect(out.map((l) => l.custom_id).sort()).toEqual(['c-0', 'c-1', 'c-2']);
    const { charges, sum } = await chargesOf(organizationId, id);
    expect(charges.map((e) => e.generationId).sort()).toEqual(out.map((l) => l.response.request_id).sort());
    expect(money((await s.t.db.batch.findUniqueOrThrow({ where: { id } })).cost).toFixed(10)).toBe(sum.toFixed(10));
  } finally {
    await queue.resume();
  }
});

it('two runs of one driver: a line one run was refused while the other ordered it is answered from its generation, never as the refusal', async () => {
  const queue = s.ctx.queues.batches;
  await queue.pause();
  try {
    const { id, auth, organizationId } = await pausedBatch(2, 'r');
    const other = driverOf();
    let otherStep: Promise<unknown> | undefined;
    const real = stackKinds(s);
    const chat = real['/v1/chat/completions'];
    // The first run's orders: meanwhile the other run steps (reads the lines claimed and not ordered, orders them,
    // granted), then the first run's are refused, as when the money ran out a moment before.
    const refused = driverOf(s.ctx.db, {
      ...real,
      '/v1/chat/completions': {
        ...chat,
        order: async () => {
          otherStep ??= other.step(id);
          await otherStep;
          throw new AppError('INSUFFICIENT_BALANCE', 'Insufficient funds: the organization balance does not cover this request');
        },
      },
    });
    await other.step(id); // validation: in_progress
    await refused.step(id);
    await runToEnd(other, id);

    const b = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
    expect(b.status).toBe('completed');
    const out = await linesOf(auth, b.output_file_id);
    const errors = await linesOf(auth, b.error_file_id);
    const { gens, charges, sum } = await chargesOf(organizationId, id);
    expect(gens).toHaveLength(2);
    // Each line once, from its generation: 200, charged once; the batch's cost what the ledger charged.
    expect(errors).toEqual([]);
    expect(out.map((l) => l.custom_id).sort()).toEqual(['r-0', 'r-1']);
    expect(out.map((l) => l.response.request_id).sort()).toEqual(gens.map((g) => g.id).sort());
    expect(charges.map((e) => e.generationId).sort()).toEqual(gens.map((g) => g.id).sort());
    expect(money((await s.t.db.batch.findUniqueOrThrow({ where: { id } })).cost).toFixed(10)).toBe(sum.toFixed(10));
  } finally {
    await queue.resume();
  }
});

it("two runs of one driver never step at once: the second run's step waits for nothing and does nothing while the first holds the batch", async () => {
  const queue = s.ctx.queues.batches;
  await queue.pause();
  try {
    const { id, auth } = await pausedBatch(2, 'x');
    const steps = new BatchSteps(s.ctx.redis, s.ctx.config.queuePrefix);
    const driver = () => handDriver(s, { steps });
    const first = driver();
    await first.step(id); // validation: in_progress
    const version = async () => (await s.t.db.batch.findUniqueOrThrow({ where: { id } })).version;
    // The first run holds the batch for a whole step: the other's steps skip, the row untouched, nothing ordered.
    let release!: () => void;
    const held = steps.exclusive(id, () => new Promise<void>((r) => (release = r)));
    const before = await version();
    const second = driver();
    for (let i = 0; i < 3; i++) expect(await second.step(id)).toEqual({ more: true, moved: false });
    expect(await version()).toBe(before);
    expect(await s.t.db.generation.count({ where: { id: { contains: id.slice('batch_'.length) } } })).toBe(0);
    release();
    await held;
    await runToEnd(second, id);
    const b = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
    expect(b.status).toBe('completed');
    expect(b.request_counts).toMatchObject({ total: 2, completed: 2, failed: 0 });
  } finally {
    await queue.resume();
  }
});

it('a step longer than its hold keeps the batch (renewed while it runs); a hold its process left lapses', async () => {
  const steps = new BatchSteps(s.ctx.redis, s.ctx.config.queuePrefix, 300);
  let release!: () => void;
  const long = steps.exclusive('batch_renewed', () => new Promise<void>((r) => (release = r)));
  // Held well past its 300 ms by renewals (every 100 ms): its key's expiry moved back up eight times.
  const key = `${s.ctx.config.queuePrefix}:batch-step:batch_renewed`;
  let [renewals, left] = [0, await s.ctx.redis.pttl(key)];
  await waitFor('the hold renewed eight times', async () => {
    const now = await s.ctx.redis.pttl(key);
    if (now > left + 50) renewals++;
    left = now;
    return renewals === 8;
  }, 10_000, 10);
  expect(await steps.exclusive('batch_renewed', async () => 'ran')).toBeUndefined();
  release();
  await long;
  expect(await steps.exclusive('batch_renewed', async () => 'ran')).toBe('ran');
  // A process that died mid-step: its key is never renewed nor released.
  await s.ctx.redis.set(`${s.ctx.config.queuePrefix}:batch-step:batch_left`, 'dead', 'PX', 300);
  expect(await steps.exclusive('batch_left', async () => 'ran')).toBeUndefined();
  await waitFor('the hold to lapse', async () => (await s.ctx.redis.exists(`${s.ctx.config.queuePrefix}:batch-step:batch_left`)) === 0);
  expect(await steps.exclusive('batch_left', async () => 'ran')).toBe('ran');
});
