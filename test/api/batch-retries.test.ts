/**
 * A batch line tries a transient failure of ours again (docs/batches.md "Transient failures"; issue 38 item 6): an
 * order refused because PostgreSQL or Redis is away, or a generation that ended failed 503 uncharged (the reaper's, for
 * a job lost with Redis), is ordered again after a back-off, as a generation of its own with the line's Idempotency-Key,
 * within BATCH_LINE_RETRY_MS of its first failure; past it the 503 is its answer. Never charged twice. The driver is
 * stepped by hand on a clock the test moves on (the back-off is seconds).
 */
import request from 'supertest';
import { stuckGenerationReaper } from '../../workers/processors/reap-stuck-generations.processor';
import type { BatchLineKind } from '../../api/services/batch-lines';
import { chargesOf, chatLines, handDriver, linesOf, newChatBatch, stackKinds } from '../helpers/batch-driving';
import { createTestStack, type TestStack } from '../helpers/test-stack';
import { waitFor } from '../helpers/until';
import type { BatchDriver } from '../../api/services/batch-driver';

let s: TestStack;

beforeAll(async () => {
  s = await createTestStack({ env: { BATCH_POLL_MS: '50' } });
});
afterAll(() => s.close());

/** A clock `ahead` ms past the real one: each step of `runOn` moves it 2 s on (past any back-off so far). */
const ahead = { ms: 0 };
const clock = () => new Date(Date.now() + ahead.ms);

async function runOn(driver: BatchDriver, id: string): Promise<void> {
  await waitFor('the batch to end', async () => {
    const more = (await driver.step(id)).more;
    if (more) ahead.ms += 2_000;
    return !more;
  }, 20_000);
}

/** The stack's chat kind, the orders of line `line` of batch `id` (any try's) refused by `refuse` (its nth order) first. */
function refusing(id: string, line: number, refuse: (n: number) => Error | null): Record<string, BatchLineKind> {
  const ofLine = new RegExp(`_${id.slice('batch_'.length)}l${line}(t\\d+)?$`);
  const real = stackKinds(s);
  const chat = real['/v1/chat/completions'];
  let n = 0;
  return {
    ...real,
    '/v1/chat/completions': {
      ...chat,
      order: async (c, body, gid) => {
        const e = ofLine.test(gid) ? refuse(++n) : null;
        if (e) throw e;
        return chat.order(c, body, gid);
      },
    },
  };
}

/** PostgreSQL away, as Prisma reports it to the order's reservation. */
const pgAway = () => Object.assign(new Error("Can't reach database server at `127.0.0.1:5432`"), { name: 'PrismaClientInitializationError' });

async function ended(id: string, auth: Record<string, string>) {
  const b = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
  return { b, out: await linesOf(s, auth, b.output_file_id), errors: await linesOf(s, auth, b.error_file_id) };
}

it('orders a line again, on a generation of its own, when its order failed because PostgreSQL was away; charged once', async () => {
  const queue = s.ctx.queues.batches;
  await queue.pause();
  try {
    const { id, auth, organizationId } = await newChatBatch(s, chatLines(3, 'pg'));
    const suffix = id.slice('batch_'.length);
    const driver = handDriver(s, { clock, kinds: refusing(id, 2, (n) => (n <= 2 ? pgAway() : null)) });
    await runOn(driver, id);
    const { b, out, errors } = await ended(id, auth);
    expect(b.status).toBe('completed');
    expect(errors).toEqual([]);
    expect(out.map((l) => l.custom_id).sort()).toEqual(['pg-0', 'pg-1', 'pg-2']);
    // Two refused orders (nothing recorded), then a third try: its own id, the only generation of the line.
    expect(out.find((l) => l.custom_id === 'pg-1')!.response.request_id).toBe(`gen_${suffix}l2t3`);
    const { gens, charges } = await chargesOf(s, organizationId, id);
    expect(gens.map((g) => g.id).sort()).toEqual([`gen_${suffix}l1`, `gen_${suffix}l2t3`, `gen_${suffix}l3`]);
    expect(charges).toHaveLength(3);
  } finally {
    await queue.resume();
  }
});

it('orders a line again on a try of its own when its first try was discarded and the step that ordered it could not commit that: never a generation that cannot end', async () => {
  const queue = s.ctx.queues.batches;
  const text = s.ctx.queues.text;
  await queue.pause();
  const realAdd = text.add.bind(text);
  const add = jest.spyOn(text, 'add');
  try {
    const { id, auth, organizationId } = await newChatBatch(s, chatLines(3, 'gone'));
    const suffix = id.slice('batch_'.length);
    const first = `gen_${suffix}l2`;
    // Line 2's job cannot be added (Redis away): its generation is discarded (reservation released, record deleted).
    // Meanwhile another run of the driver commits (as after a Redis wipe, when the resumer starts a second run), so this
    // step's commit of the refusal does not apply and the batch still names the first try.
    let refused = false;
    add.mockImplementation(async (name, data, opts) => {
      if (opts?.jobId !== first) return realAdd(name, data, opts);
      await s.t.db.batch.update({ where: { id }, data: { version: { increment: 1 } } });
      refused = true;
      throw new Error('Connection is closed.');
    });
    const driver = handDriver(s, { clock });
    // The first step validates the input, the next one orders the lines.
    for (let i = 0; i < 5 && !refused; i++) await driver.step(id);
    add.mockRestore();
    expect(refused).toBe(true);
    const row = await s.t.db.batch.findUniqueOrThrow({ where: { id } });
    expect((row.inFlight as Array<{ id: string }>).map((l) => l.id)).toContain(first);
    expect(await s.t.db.generation.count({ where: { id: first } })).toBe(0);

    // The next step orders that first try again: refused (its id was settled when it was discarded), the line goes on
    // to a try of its own, which answers.
    await runOn(driver, id);
    const { b, out, errors } = await ended(id, auth);
    expect(b.status).toBe('completed');
    expect(errors).toEqual([]);
    expect(out.find((l) => l.custom_id === 'gone-1')!.response.request_id).toBe(`gen_${suffix}l2t2`);
    const { gens, charges } = await chargesOf(s, organizationId, id);
    expect(gens.map((g) => g.id).sort()).toEqual([`gen_${suffix}l1`, `gen_${suffix}l2t2`, `gen_${suffix}l3`]);
    expect(charges).toHaveLength(3);
  } finally {
    add.mockRestore();
    await queue.resume();
  }
});

it('orders a line again when its generation failed 503 uncharged (its job lost with Redis, reaped): the failed try stays released, the new one is the answer', async () => {
  const queue = s.ctx.queues.batches;
  const text = s.ctx.queues.text;
  await queue.pause();
  try {
    const { id, auth, organizationId } = await newChatBatch(s, chatLines(2, 'lost'));
    const suffix = id.slice('batch_'.length);
    const driver = handDriver(s, { clock });
    // The lines are ordered while no worker takes them; then their jobs are lost (as with a Redis that came back empty)
    // and the reaper fails their generations 503, uncharged.
    await text.pause();
    for (let i = 0; i < 3; i++) await driver.step(id);
    const first = [`gen_${suffix}l1`, `gen_${suffix}l2`];
    expect((await s.t.db.generation.findMany({ where: { id: { in: first } } })).map((g) => g.status)).toEqual(['pending', 'pending']);
    for (const g of first) await (await text.getJob(g))!.remove();
    const reap = stuckGenerationReaper({ ...s.workerDeps, clock: () => new Date(Date.now() + 60_000) }, { everyMs: 1_000, minAgeMs: 1_000 });
    expect((await reap()).reaped).toBe(2);
    await text.resume();
    await runOn(driver, id);

    const { b, out, errors } = await ended(id, auth);
    expect(b.status).toBe('completed');
    expect(errors).toEqual([]);
    expect(out.map((l) => [l.custom_id, l.response.request_id]).sort()).toEqual([
      ['lost-0', `gen_${suffix}l1t2`],
      ['lost-1', `gen_${suffix}l2t2`],
    ]);
    const { gens, charges } = await chargesOf(s, organizationId, id);
    expect(gens.filter((g) => g.status === 'failed').map((g) => [g.id, (g.error as { code: string }).code, g.clientCost.toString()]).sort()).toEqual([
      [`gen_${suffix}l1`, 'SERVICE_UNAVAILABLE', '0'],
      [`gen_${suffix}l2`, 'SERVICE_UNAVAILABLE', '0'],
    ]);
    expect(charges.map((c) => c.generationId).sort()).toEqual([`gen_${suffix}l1t2`, `gen_${suffix}l2t2`]);
  } finally {
    await text.resume();
    await queue.resume();
  }
});

it('answers the 503 once BATCH_LINE_RETRY_MS has passed since the first failure: the retries are bounded', async () => {
  const queue = s.ctx.queues.batches;
  await queue.pause();
  try {
    const { id, auth } = await newChatBatch(s, chatLines(2, 'gone'));
    const suffix = id.slice('batch_'.length);
    let tries = 0;
    const driver = handDriver(s, { clock, settings: { ...s.ctx.config.batches, lineRetryMs: 10_000 }, kinds: refusing(id, 2, () => (tries++, pgAway())) });
    await runOn(driver, id);
    const { b, out, errors } = await ended(id, auth);
    expect(b.status).toBe('completed');
    expect(out.map((l) => l.custom_id)).toEqual(['gone-0']);
    expect(errors.map((e) => [e.custom_id, e.response.status_code, e.response.body.error?.code, e.response.request_id])).toEqual([['gone-1', 503, 'SERVICE_UNAVAILABLE', null]]);
    // Tried at its first failure, after back-offs as long as the failure had lasted, and last as its 10 s ran out.
    expect(tries).toBeGreaterThan(2);
    expect(tries).toBeLessThan(8);
  } finally {
    await queue.resume();
  }
});
