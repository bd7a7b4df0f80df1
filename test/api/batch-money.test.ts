/**
 * A batch pays its lines in turn (docs/batches.md "A batch never overspends"; issue 38 item 3): a line refused for money
 * while lines of its own batch hold reservations waits for them instead of answering 402, and a line that cannot be
 * paid with nothing of its batch in flight answers 402 (no batch waits for ever). Each line's bound is large beside
 * what it costs (a chat line without max_tokens reserves its model's 4,096 output tokens, ~0.66 RUB; it costs ~0.002).
 */
import request from 'supertest';
import { AppError } from '../../shared/errors/app-error';
import { money } from '../../shared/money';
import { chargesOf, chatLines, handDriver, linesOf, newChatBatch, runToEnd, stackKinds } from '../helpers/batch-driving';
import { createTestStack, STACK_MODELS, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

let s: TestStack;

beforeAll(async () => {
  s = await createTestStack({ env: { BATCH_POLL_MS: '50' } });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

/** Runs a batch of `lines` by an organization with `balance` on the stack's own drivers, to its end. */
async function runBatch(lines: object[], balance: string) {
  const { id, auth, organizationId } = await newChatBatch(s, lines, { balance });
  await waitUntil(async () => (['completed', 'failed', 'expired', 'cancelled'].includes((await request(s.app).get(`/v1/batches/${id}`).set(auth)).body.status) ? true : undefined), 60_000);
  const b = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
  const { gens, charges, sum } = await chargesOf(s, organizationId, id);
  const org = await s.t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
  return { b, out: await linesOf(s, auth, b.output_file_id), errors: await linesOf(s, auth, b.error_file_id), gens, charges, sum, org };
}

it('runs every line of a batch its balance can pay, though only three lines\' bounds fit at once: none answers 402', async () => {
  const r = await runBatch(chatLines(40, 'fit', {}), '2');
  expect(r.b.status).toBe('completed');
  expect(r.errors.map((e) => e.response.status_code)).toEqual([]);
  expect(r.b.request_counts).toEqual({ total: 40, completed: 40, failed: 0 });
  // Each line charged once, the batch's cost what the ledger charged, the balance lost exactly that, nothing held.
  expect(r.charges).toHaveLength(40);
  expect(money(r.b.usage.cost_rub).toFixed(6)).toBe(r.sum.toFixed(6));
  expect(money('2').minus(money(r.org.balance)).toFixed(10)).toBe(r.sum.toFixed(10));
  expect(money(r.org.reserved).isZero()).toBe(true);
  // Every line ran as its call alone would: its whole bound reserved, its output never lowered for its siblings.
  const records = await s.t.db.generation.findMany({ where: { id: { in: r.out.map((l) => l.response.request_id!) } }, select: { warnings: true } });
  expect(records.filter((g) => JSON.stringify(g.warnings ?? []).includes('lowered'))).toEqual([]);
});

it('answers 402 for a line that cannot be paid with nothing of its batch in flight; the others run', async () => {
  // Line 3's input alone costs more than the balance (its minimum does not fit): it waits for the lines in flight, then
  // is ordered as its call would be, and refused.
  const lines = chatLines(8, 'big', {}).map((l, i) => (i === 3 ? { ...l, body: { model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'x '.repeat(60_000) }] } } : l));
  const r = await runBatch(lines, '1');
  expect(r.b.status).toBe('completed');
  expect(r.errors.map((e) => [e.custom_id, e.response.status_code, e.response.body.error?.code, e.response.request_id])).toEqual([['big-3', 402, 'INSUFFICIENT_BALANCE', null]]);
  expect(r.out.map((l) => l.custom_id).sort()).toEqual(['big-0', 'big-1', 'big-2', 'big-4', 'big-5', 'big-6', 'big-7']);
  expect(r.gens.every((g) => g.status === 'completed')).toBe(true);
  expect(money(r.org.reserved).isZero()).toBe(true);
});

it('the line refused as the last line of its batch in flight ends is not answered 402: it waits, is tried again and runs', async () => {
  const queue = s.ctx.queues.batches;
  await queue.pause();
  try {
    const { id, auth, organizationId } = await newChatBatch(s, chatLines(2, 'race'), { balance: '10' });
    const real = stackKinds(s);
    const chat = real['/v1/chat/completions'];
    let refusedOnce = false;
    // Line 1's first order is refused for money at the moment line 0 (granted in the same step) has ended: the step
    // read line 0 as holding its reservation, as it did a moment before.
    const driver = handDriver(s, {
      kinds: {
        ...real,
        '/v1/chat/completions': {
          ...chat,
          order: async (c, body, gid) => {
            if (gid.endsWith('l2') && !refusedOnce) {
              refusedOnce = true;
              await waitUntil(async () => (await s.t.db.generation.findFirst({ where: { id: { endsWith: `${id.slice('batch_'.length)}l1` }, status: 'completed' } })) ?? undefined, 10_000);
              throw new AppError('INSUFFICIENT_BALANCE', 'Insufficient funds: the organization balance does not cover this request');
            }
            return chat.order(c, body, gid);
          },
        },
      },
    });
    await runToEnd(driver, id);
    expect(refusedOnce).toBe(true);
    const b = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
    expect(b.status).toBe('completed');
    expect(await linesOf(s, auth, b.error_file_id)).toEqual([]);
    expect((await linesOf(s, auth, b.output_file_id)).map((l) => l.custom_id).sort()).toEqual(['race-0', 'race-1']);
    const { charges } = await chargesOf(s, organizationId, id);
    expect(charges).toHaveLength(2);
  } finally {
    await queue.resume();
  }
});
