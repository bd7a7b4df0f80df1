import { Batcher } from '../../shared/db/batcher';

// The hold is a timer: the batcher's clock is Jest's (promises and nextTick stay real), so "the hold ran out" is a
// step of that clock, not a wait.
beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] }));
afterEach(() => jest.useRealTimers());

describe('Batcher', () => {
  it('sends the first item at once and groups the ones that arrive meanwhile', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        await Promise.resolve(); // in flight while the others are submitted
        return items.map((i) => i * 2);
      },
      String,
    );
    const results = await Promise.all([1, 2, 3, 4].map((i) => b.submit(i)));
    expect(results).toEqual([2, 4, 6, 8]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('never puts two items with the same key in one batch', async () => {
    const batches: string[][] = [];
    const b = new Batcher<string, string>(async (items) => (batches.push(items), items), (s) => s);
    await Promise.all(['x', 'a', 'a', 'b'].map((s) => b.submit(s)));
    expect(batches).toEqual([['x'], ['a', 'b'], ['a']]);
  });

  it('isolates a failing item by retrying the batch item by item', async () => {
    const b = new Batcher<number, number>(
      async (items) => {
        await Promise.resolve();
        if (items.includes(3)) throw new Error('bad item');
        return items;
      },
      String,
    );
    const results = await Promise.allSettled([1, 2, 3, 4].map((i) => b.submit(i)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  });

  it('holds an item nobody waits on until another comes to share its batch, or until holdMs', async () => {
    const batches: Array<{ items: number[]; at: number }> = [];
    const b = new Batcher<number, number>(async (items) => (batches.push({ items, at: Date.now() }), items), String, 256, 200);
    const t0 = Date.now();
    const held = b.submit(1, { hold: true });
    await jest.advanceTimersByTimeAsync(20);
    expect(batches).toEqual([]);
    await Promise.all([held, b.submit(2)]);
    expect(batches.map((x) => x.items)).toEqual([[1, 2]]);
    expect(batches[0].at - t0).toBe(20); // when the second came, not when the hold ran out
    // Alone, it goes out when the hold ends.
    const t1 = Date.now();
    const alone = b.submit(3, { hold: true });
    await jest.advanceTimersByTimeAsync(199);
    expect(batches).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    await alone;
    expect(batches.map((x) => x.items)).toEqual([[1, 2], [3]]);
    expect(batches[1].at - t1).toBe(200);
  });

  /** A batcher whose batches wait until released, recording which started. */
  function gated(holdMs: number) {
    const started: number[][] = [];
    const gates: Array<() => void> = [];
    const b = new Batcher<number, number>(
      async (items) => {
        started.push(items);
        await new Promise<void>((r) => gates.push(r));
        return items.map((i) => i * 10);
      },
      String,
      256,
      holdMs,
    );
    // Lets the batcher run what it has to (promises, its setImmediate) without moving the clock.
    const tick = () => jest.advanceTimersByTimeAsync(0);
    return { b, started, gates, release: () => gates.splice(0).forEach((g) => g()), tick };
  }

  it('starts one batch beside a batch of held items only, for an item a caller waits on', async () => {
    const { b, started, release, tick } = gated(20);
    const held = b.submit(1, { hold: true });
    await jest.advanceTimersByTimeAsync(20); // the hold ran out: [1] is in flight alone
    expect(started).toEqual([[1]]);
    const waited = b.submit(2);
    expect(started).toEqual([[1], [2]]); // at once, beside it
    const more = [b.submit(3), b.submit(4, { hold: true })];
    await tick();
    expect(started).toEqual([[1], [2]]); // at most one beside: the rest waits for the loop
    release();
    await tick();
    expect(started).toEqual([[1], [2], [3, 4]]);
    release();
    expect(await Promise.all([held, waited, ...more])).toEqual([10, 20, 30, 40]);
  });

  it('queues an item behind a batch that a caller waits on', async () => {
    const { b, started, release, tick } = gated(20);
    const first = b.submit(1);
    const second = b.submit(2);
    const held = b.submit(3, { hold: true });
    await tick();
    expect(started).toEqual([[1]]);
    release();
    await tick();
    expect(started).toEqual([[1], [2, 3]]);
    release();
    expect(await Promise.all([first, second, held])).toEqual([10, 20, 30]);
  });

  it('answers the item beside without waiting for the held batch; what queued meanwhile goes to the loop', async () => {
    const { b, started, gates, tick } = gated(20);
    let heldDone = false;
    const held = b.submit(1, { hold: true }).then((v) => ((heldDone = true), v));
    await jest.advanceTimersByTimeAsync(20);
    const waited = b.submit(2);
    const queued = b.submit(3);
    gates[1]!(); // the batch beside commits first
    expect(await waited).toBe(20);
    expect(heldDone).toBe(false);
    await tick();
    expect(started).toEqual([[1], [2]]); // [3] waits for the loop, not for another batch beside
    gates[0]!();
    await tick();
    expect(started).toEqual([[1], [2], [3]]);
    gates[2]!();
    expect(await Promise.all([held, queued])).toEqual([10, 30]);
  });
  it('runs an item only after the one of its key in the batch beside has ended (a drawn open, then its close)', async () => {
    const { b, started, gates, tick } = gated(20);
    const held = b.submit(1, { hold: true });
    await jest.advanceTimersByTimeAsync(20); // [1] in flight alone, held
    const open = b.submit(7); // beside it
    expect(started).toEqual([[1], [7]]);
    const close = b.submit(7, { hold: true }); // same key, while the open is still in flight beside
    gates[0]!(); // the loop's batch ends first: the close must not start while the open runs
    await tick();
    expect(started).toEqual([[1], [7]]);
    gates[1]!();
    await tick();
    expect(started).toEqual([[1], [7]]); // the close is held: it waits for company up to holdMs (20 ms)
    await jest.advanceTimersByTimeAsync(19);
    expect(started).toEqual([[1], [7]]);
    await jest.advanceTimersByTimeAsync(1);
    expect(started).toEqual([[1], [7], [7]]);
    gates[2]!();
    expect(await Promise.all([held, open, close])).toEqual([10, 70, 70]);
  });
});
