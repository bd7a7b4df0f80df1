import { GroupCommit } from '../../shared/db/group-commit';

describe('GroupCommit', () => {
  it('sends the first item at once and groups the ones that arrive meanwhile', async () => {
    const groups: number[][] = [];
    const b = new GroupCommit<number, number>(
      async (items) => {
        groups.push(items);
        await Promise.resolve(); // in flight while the others are submitted
        return items.map((i) => i * 2);
      },
      String,
    );
    const results = await Promise.all([1, 2, 3, 4].map((i) => b.submit(i)));
    expect(results).toEqual([2, 4, 6, 8]);
    expect(groups).toEqual([[1], [2, 3, 4]]);
  });

  it('never puts two items with the same key in one group', async () => {
    const groups: string[][] = [];
    const b = new GroupCommit<string, string>(async (items) => (groups.push(items), items), (s) => s);
    await Promise.all(['x', 'a', 'a', 'b'].map((s) => b.submit(s)));
    expect(groups).toEqual([['x'], ['a', 'b'], ['a']]);
  });

  it('isolates a failing item by retrying the group item by item', async () => {
    const b = new GroupCommit<number, number>(
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

  it('gathers background items for its gatherMs and commits them as one group; a waited-on item does not wait for them', async () => {
    jest.useFakeTimers();
    try {
      const groups: number[][] = [];
      const b = new GroupCommit<number, number>(async (items) => (groups.push(items), items), String, { gatherMs: 20 });
      const gathered = [b.submit(1, { background: true }), b.submit(2, { background: true })];
      expect(await b.submit(3)).toBe(3);
      await jest.advanceTimersByTimeAsync(19);
      expect(groups).toEqual([[3]]);
      await jest.advanceTimersByTimeAsync(1);
      expect(await Promise.all(gathered)).toEqual([1, 2]);
      expect(groups).toEqual([[3], [1, 2]]);
      // The next background item starts a gathering of its own.
      const next = b.submit(4, { background: true });
      await jest.advanceTimersByTimeAsync(20);
      expect(await next).toBe(4);
      expect(groups).toEqual([[3], [1, 2], [4]]);
    } finally {
      jest.useRealTimers();
    }
  });

  it("a waited-on item of a key gathered goes after it: the gathered items are not kept waiting", async () => {
    jest.useFakeTimers();
    try {
      const groups: string[][] = [];
      const b = new GroupCommit<string, string>(async (items) => (groups.push(items), items), (s) => s[0]!, { gatherMs: 20 });
      const gathered = [b.submit('a1', { background: true }), b.submit('b1', { background: true })];
      expect(await b.submit('a2')).toBe('a2');
      expect(await Promise.all(gathered)).toEqual(['a1', 'b1']);
      expect(groups).toEqual([['a1', 'b1'], ['a2']]);
      // Nothing is left to the timer.
      await jest.advanceTimersByTimeAsync(20);
      expect(groups).toEqual([['a1', 'b1'], ['a2']]);
    } finally {
      jest.useRealTimers();
    }
  });

  /** A group commit whose groups wait until released, recording which started. */
  function gated() {
    const started: number[][] = [];
    const gates: Array<() => void> = [];
    const b = new GroupCommit<number, number>(
      async (items) => {
        started.push(items);
        await new Promise<void>((r) => gates.push(r));
        return items.map((i) => i * 10);
      },
      String,
    );
    // Lets the group commit run what it has to (promises, its setImmediate).
    const tick = () => new Promise((r) => setImmediate(r));
    return { b, started, gates, release: () => gates.splice(0).forEach((g) => g()), tick };
  }

  it('starts one group beside a group of background items only, for an item a caller waits on', async () => {
    const { b, started, release, tick } = gated();
    const background = b.submit(1, { background: true });
    await tick();
    expect(started).toEqual([[1]]);
    const waited = b.submit(2);
    expect(started).toEqual([[1], [2]]); // at once, beside it
    const more = [b.submit(3), b.submit(4, { background: true })];
    await tick();
    expect(started).toEqual([[1], [2]]); // at most one beside: the rest waits for the loop
    release();
    await tick();
    expect(started).toEqual([[1], [2], [3, 4]]);
    release();
    expect(await Promise.all([background, waited, ...more])).toEqual([10, 20, 30, 40]);
  });

  it('queues an item behind a group that a caller waits on', async () => {
    const { b, started, release, tick } = gated();
    const first = b.submit(1);
    const second = b.submit(2);
    const background = b.submit(3, { background: true });
    await tick();
    expect(started).toEqual([[1]]);
    release();
    await tick();
    expect(started).toEqual([[1], [2, 3]]);
    release();
    expect(await Promise.all([first, second, background])).toEqual([10, 20, 30]);
  });

  it('answers the item beside without waiting for the background group; what queued meanwhile goes to the loop', async () => {
    const { b, started, gates, tick } = gated();
    let backgroundDone = false;
    const background = b.submit(1, { background: true }).then((v) => ((backgroundDone = true), v));
    await tick();
    const waited = b.submit(2);
    const queued = b.submit(3);
    gates[1]!(); // the group beside commits first
    expect(await waited).toBe(20);
    expect(backgroundDone).toBe(false);
    await tick();
    expect(started).toEqual([[1], [2]]); // [3] waits for the loop, not for another group beside
    gates[0]!();
    await tick();
    expect(started).toEqual([[1], [2], [3]]);
    gates[2]!();
    expect(await Promise.all([background, queued])).toEqual([10, 30]);
  });
  it('runs an item only after the one of its key in the group beside has ended (a drawn open, then its close)', async () => {
    const { b, started, gates, tick } = gated();
    const background = b.submit(1, { background: true });
    await tick(); // [1] in flight alone, in the background
    const open = b.submit(7); // beside it
    expect(started).toEqual([[1], [7]]);
    const close = b.submit(7, { background: true }); // same key, while the open is still in flight beside
    gates[0]!(); // the loop's group ends first: the close must not start while the open runs
    await tick();
    expect(started).toEqual([[1], [7]]);
    gates[1]!();
    await tick();
    expect(started).toEqual([[1], [7], [7]]); // once the open has ended
    gates[2]!();
    expect(await Promise.all([background, open, close])).toEqual([10, 70, 70]);
  });

  describe('foldIn', () => {
    /** Items are [key, parts]; an item folds into a waiting one of its key as their parts together. */
    type Item = [string, string[]];
    const fold = (waiting: Item, next: Item): Item | null => (next[1][0] === 'never' ? null : [waiting[0], [...waiting[1], ...next[1]]]);

    it('folds an item into one of its key still gathered: one item in its gathering, one result for both callers', async () => {
      jest.useFakeTimers();
      try {
        const groups: Item[][] = [];
        const b = new GroupCommit<Item, string>(async (items) => (groups.push(items), items.map((i) => i[1].join('+'))), (i) => i[0], { gatherMs: 20, fold });
        const open = b.submit(['g', ['open']], { background: true });
        const other = b.submit(['h', ['open']], { background: true });
        const close = b.foldIn(['g', ['close']]);
        expect(close).not.toBeNull();
        expect(b.foldIn(['x', ['close']])).toBeNull(); // nothing of its key waits: nothing submitted
        expect(b.foldIn(['h', ['never']])).toBeNull(); // `fold` keeps them apart
        await jest.advanceTimersByTimeAsync(20);
        expect(await Promise.all([open, close, other])).toEqual(['open+close', 'open+close', 'open']);
        expect(groups).toEqual([[['g', ['open', 'close']], ['h', ['open']]]]);
      } finally {
        jest.useRealTimers();
      }
    });

    it('folds into an item queued behind a group in flight, never into one in flight; a failure rejects both callers', async () => {
      const started: Item[][] = [];
      const gates: Array<(ok: boolean) => void> = [];
      const b = new GroupCommit<Item, string>(
        async (items) => {
          started.push(items);
          if (!(await new Promise<boolean>((r) => gates.push(r)))) throw new Error('the database went away');
          return items.map((i) => i[1].join('+'));
        },
        (i) => i[0],
        { fold },
      );
      const first = b.submit(['g', ['open']]);
      expect(b.foldIn(['g', ['close']])).toBeNull(); // in flight
      const queued = b.submit(['h', ['open']]);
      const folded = b.foldIn(['h', ['close']]);
      gates[0]!(true);
      expect(await first).toBe('open');
      await new Promise((r) => setImmediate(r));
      expect(started).toEqual([[['g', ['open']]], [['h', ['open', 'close']]]]);
      gates[1]!(false);
      await expect(queued).rejects.toThrow('the database went away');
      await expect(folded).rejects.toThrow('the database went away');
    });
  });
});
