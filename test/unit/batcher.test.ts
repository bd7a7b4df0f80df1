import { Batcher } from '../../shared/db/batcher';

describe('Batcher', () => {
  it('sends the first item at once and groups the ones that arrive meanwhile', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        await new Promise((r) => setTimeout(r, 10));
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
    await new Promise((r) => setTimeout(r, 20));
    expect(batches).toEqual([]);
    await Promise.all([held, b.submit(2)]);
    expect(batches.map((x) => x.items)).toEqual([[1, 2]]);
    expect(batches[0].at - t0).toBeLessThan(150);
    // Alone, it goes out when the hold ends.
    const t1 = Date.now();
    await b.submit(3, { hold: true });
    expect(batches.map((x) => x.items)).toEqual([[1, 2], [3]]);
    expect(batches[1].at - t1).toBeGreaterThanOrEqual(190);
  });
});
