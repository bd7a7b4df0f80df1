/**
 * The money rule of a batch's orders (api/services/batch-orders.ts orderInTurn; docs/batches.md "A batch never
 * overspends") and the back-off of a line's transient failures, over a fake order: which lines are granted, wait or
 * answer 402, and in what order each is tried.
 */
import { failedTransiently, nextTry, orderInTurn, retryOf, type InFlight, type Ordered } from '../../api/services/batch-orders';
import { AppError } from '../../shared/errors/app-error';

const line = (n: number): InFlight => ({ line: n, offset: n * 100, customId: `c-${n}`, id: `gen_b${n}` });
const short = () => new AppError('INSUFFICIENT_BALANCE', 'Insufficient funds');

/** An order over a balance: `whole` takes the line's bound or nothing, the call's rule takes down to its minimum. */
function ledger(balance: number, bound: (l: InFlight) => number, minimum: (l: InFlight) => number) {
  const calls: string[] = [];
  let free = balance;
  const order = async (l: InFlight, whole: boolean): Promise<Ordered> => {
    calls.push(`${l.line}${whole ? '' : ' as call'}`);
    const need = whole ? bound(l) : Math.min(bound(l), Math.max(minimum(l), free));
    if (need > free) return { kind: 'funds', error: short() };
    free -= need;
    return { kind: 'granted', id: l.id };
  };
  return { order, calls, free: () => free };
}

const kinds = (out: Map<number, Ordered | 'wait'>) => Object.fromEntries([...out].map(([n, o]) => [n, o === 'wait' ? 'wait' : o.kind]));

describe('orderInTurn', () => {
  it("a line refused for money while the batch's own lines hold reservations waits; none answers 402", async () => {
    const l = ledger(3, () => 1, () => 0.1);
    const out = await orderInTurn(l.order, [0, 1, 2, 3, 4].map(line), [], 0);
    expect(kinds(out)).toEqual({ 0: 'granted', 1: 'granted', 2: 'granted', 3: 'wait', 4: 'wait' });
    // The refused fresh lines are not ordered again: the first waits, and every later one with it.
    expect(l.calls.sort()).toEqual(['0', '1', '2', '3', '4']);
  });

  it('with nothing of the batch holding money, the first refused line is ordered as its call (lowered to what fits); the later ones wait', async () => {
    const l = ledger(0.5, () => 1, () => 0.1);
    const out = await orderInTurn(l.order, [line(0), line(1)], [], 0);
    expect(kinds(out)).toEqual({ 0: 'granted', 1: 'wait' });
    expect(l.calls).toEqual(['0', '1', '0 as call']);
    expect(l.free()).toBe(0);
  });

  it("a line that cannot be paid with nothing of its batch in flight answers 402, and the next is tried the same way (no dead end)", async () => {
    const l = ledger(0.05, () => 1, () => 0.1);
    const out = await orderInTurn(l.order, [], [line(0), line(1)], 0);
    expect(kinds(out)).toEqual({ 0: 'refused', 1: 'refused' });
    expect((out.get(0) as { error: AppError }).error.status).toBe(402);
    expect(l.calls).toEqual(['0', '0 as call', '1', '1 as call']);
  });

  it('waiting lines are tried in line order once lines ended; the first refused while others hold stops the rest, untried', async () => {
    const l = ledger(2, (x) => (x.line === 3 ? 5 : 1), () => 0.1);
    const out = await orderInTurn(l.order, [], [line(4), line(2), line(3), line(5)], 1);
    expect(kinds(out)).toEqual({ 2: 'granted', 3: 'wait', 4: 'wait', 5: 'wait' });
    expect(l.calls).toEqual(['2', '3']);
  });

  it("a line bigger than the whole balance waits while the batch's lines run, then is ordered as its call once none holds money", async () => {
    const l = ledger(2, (x) => (x.line === 0 ? 5 : 1), () => 0.1);
    const first = await orderInTurn(l.order, [0, 1, 2].map(line), [], 0);
    expect(kinds(first)).toEqual({ 0: 'wait', 1: 'granted', 2: 'granted' });
    // Lines 1 and 2 ended (their money back): nothing of the batch holds any when line 0 is tried again.
    const again = ledger(2, () => 5, () => 3);
    expect(kinds(await orderInTurn(again.order, [], [line(0)], 0))).toEqual({ 0: 'refused' });
    expect(again.calls).toEqual(['0', '0 as call']);
  });

  it('other refusals are answers, and transient ones are told apart; neither holds money', async () => {
    const order = async (l: InFlight): Promise<Ordered> =>
      l.line === 0 ? { kind: 'refused', error: new AppError('NOT_FOUND', 'no model') } : l.line === 1 ? { kind: 'transient', error: new AppError('SERVICE_UNAVAILABLE', 'away') } : { kind: 'funds', error: short() };
    const out = await orderInTurn(order, [line(0), line(1), line(2)], [], 0);
    expect(kinds(out)).toEqual({ 0: 'refused', 1: 'transient', 2: 'refused' });
  });
});

describe('a line after a transient failure', () => {
  it('backs off as long as the failure has lasted (1 s at least, 30 s at most), within the window from its first failure', () => {
    const first = retryOf(line(1), 10_000, 60_000)!;
    expect(first).toMatchObject({ id: 'gen_b1', failedAt: 10_000, retryAt: 11_000 });
    expect(retryOf(first, 14_000, 60_000)).toMatchObject({ failedAt: 10_000, retryAt: 18_000 });
    expect(retryOf(first, 70_000, 60_000)).toBeNull();
    expect(retryOf(first, 69_000, 600_000)!.retryAt).toBe(99_000);
  });

  it('moves to a generation of its own per try when its current one has none, keeping when it first failed', () => {
    const l = { ...line(7), id: 'gen_abcl7' };
    const r = retryOf(l, 5_000, 60_000, { batchId: 'batch_abc', prefix: 'gen' })!;
    expect(r).toMatchObject({ id: 'gen_abcl7t2', attempt: 2, failedAt: 5_000, retryAt: 6_000 });
    expect(nextTry(r, 'batch_abc', 'gen')).toEqual({ line: 7, offset: 700, customId: 'c-7', id: 'gen_abcl7t3', attempt: 3, failedAt: 5_000 });
  });

  it('is a 503 of ours that charged nothing, never a provider failure or a charged one', () => {
    const g = (code: string, cost = '0', status: 'failed' | 'cancelled' = 'failed') => ({ status, error: { code } as never, clientCost: cost as never });
    expect(failedTransiently(g('SERVICE_UNAVAILABLE'))).toBe(true);
    expect(failedTransiently(g('SERVICE_UNAVAILABLE', '0.01'))).toBe(false);
    expect(failedTransiently(g('BAD_GATEWAY'))).toBe(false);
    expect(failedTransiently(g('SERVICE_UNAVAILABLE', '0', 'cancelled'))).toBe(false);
  });
});
