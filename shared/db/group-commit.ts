/**
 * Group commit: callers submit items one at a time; the group commit runs them as few groups as possible, one group
 * in flight at a time. The first item of an idle group commit goes out at once (no added latency when quiet); items
 * arriving while a group runs form the next one. Items submitted as `background` are ones nobody waits on (a close
 * whose reply went out, a record its reply does not wait for): they are gathered for `gatherMs` and then go together,
 * so that requests coming one at a time do not each pay a commit of their own beside the next one (bench/rounds/31); a
 * waited-on item that arrives while the group in flight carries background items only does not queue behind its
 * commit: it starts one group beside it (at most one), which the database orders by its row locks (bench/rounds/08:
 * the next request's open behind the last one's close). Items with the same key never share a group, nor run in two
 * groups at once (an item waits while an earlier one of its key is in the group beside; a waited-on item of a key
 * gathered sends the gathered items on first), so each caller gets the result of its own item, and a key's items
 * commit in the order they were submitted; one may instead be folded into an earlier one still waiting (`foldIn`: a
 * close into the record it ends, written once). A failed group is retried item by item to isolate the one that failed
 * (safe: a group is one transaction, and every item's operation is idempotent).
 */
export class GroupCommit<I, O> {
  /** Items waiting for a group, each with its key (asked once, at submit). */
  private readonly queue: Array<{ item: I; key: string; background: boolean; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private running = false;
  /** The running loop's group in flight carries only background items. */
  private backgroundInFlight = false;
  /** A group runs beside the loop's: settled when it ends. */
  private beside?: Promise<void>;
  /** Keys of the items in the groups in flight. */
  private readonly flying = new Set<string>();
  /** Background items gathered until `gatherMs` after the first of them (then they join the queue together). */
  private readonly gathered: typeof this.queue = [];
  private readonly gatheredKeys = new Set<string>();
  private gathering?: NodeJS.Timeout;

  /** How long a background item waits for others before they go (0: at once, as any item). */
  private readonly gatherMs: number;
  private readonly maxGroup: number;
  /** What an item waiting for a group and a later one of its key make together (`foldIn`), or null to keep them apart. */
  private readonly fold?: (waiting: I, next: I) => I | null;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly keyOf: (item: I) => string,
    opts: { gatherMs?: number; maxGroup?: number; fold?: (waiting: I, next: I) => I | null } = {},
  ) {
    this.gatherMs = opts.gatherMs ?? 0;
    this.maxGroup = opts.maxGroup ?? 256;
    this.fold = opts.fold;
  }

  /**
   * Folds an item into one of its key still waiting for a group (gathered or queued, not in flight), as the
   * constructor's `fold` makes them one: the folded item keeps the waiting one's place in its gathering or queue, and
   * both callers get its result. Null when there is none to fold into (nothing was submitted).
   */
  foldIn(item: I): Promise<O> | null {
    const key = this.keyOf(item);
    const host = (this.gatheredKeys.has(key) && this.gathered.find((e) => e.key === key)) || this.queue.find((e) => e.key === key);
    const folded = host && this.fold?.(host.item, item);
    if (!host || !folded) return null;
    return new Promise<O>((resolve, reject) => {
      const first = { resolve: host.resolve, reject: host.reject };
      host.item = folded;
      host.resolve = (o) => (first.resolve(o), resolve(o));
      host.reject = (e) => (first.reject(e), reject(e));
    });
  }

  submit(item: I, opts: { background?: boolean } = {}): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const background = opts.background === true;
      const entry = { item, key: this.keyOf(item), background, resolve, reject };
      if (background && this.gatherMs > 0) {
        this.gathered.push(entry);
        this.gatheredKeys.add(entry.key);
        this.gathering ??= setTimeout(this.release, this.gatherMs);
        return;
      }
      // An item of a key gathered goes after it: the gathered items join the queue first.
      if (this.gatheredKeys.has(entry.key)) this.release();
      this.queue.push(entry);
      if (!this.running) return void this.drain();
      if (!background && this.backgroundInFlight && !this.beside) this.beside = this.runBeside();
    });
  }

  /** The gathered background items join the queue (the loop's next group, or one of their own when it is idle). */
  private readonly release = (): void => {
    clearTimeout(this.gathering);
    this.gathering = undefined;
    this.gatheredKeys.clear();
    this.queue.push(...this.gathered.splice(0));
    if (!this.running) void this.drain();
  };

  private take() {
    const group: typeof this.queue = [];
    const keys = new Set<string>();
    for (let i = 0; i < this.queue.length && group.length < this.maxGroup; ) {
      const key = this.queue[i].key;
      if (keys.has(key) || this.flying.has(key)) {
        i++;
        continue;
      }
      keys.add(key);
      group.push(...this.queue.splice(i, 1));
    }
    for (const key of keys) this.flying.add(key);
    return group;
  }

  /** Runs groups while items queue. */
  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length) {
        const group = this.take();
        if (group.length === 0) {
          // Every item queued waits for one of its key in the group beside.
          await (this.beside ?? new Promise((r) => setImmediate(r)));
          continue;
        }
        this.backgroundInFlight = group.every((b) => b.background);
        try {
          await this.settle(group);
        } finally {
          this.backgroundInFlight = false;
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** One group beside the loop's group of background items; what queues meanwhile goes to the loop. */
  private async runBeside(): Promise<void> {
    try {
      const group = this.take();
      if (group.length) await this.settle(group);
    } finally {
      this.beside = undefined;
      if (!this.running && this.queue.length) void this.drain();
    }
  }

  /** Runs a group and answers its items; an item's key may run again once its item is answered (it has landed). */
  private async settle(group: typeof this.queue): Promise<void> {
    let out: O[] | undefined;
    let error: unknown;
    try {
      out = await this.run(group.map((b) => b.item));
    } catch (e) {
      error = e;
    }
    if (out || group.length === 1) {
      for (const b of group) this.flying.delete(b.key);
      if (out) group.forEach((b, i) => b.resolve(out[i]));
      else group[0].reject(error);
      return;
    }
    for (const b of group) {
      try {
        const r = (await this.run([b.item]))[0];
        this.flying.delete(b.key);
        b.resolve(r);
      } catch (err) {
        this.flying.delete(b.key);
        b.reject(err);
      }
    }
  }
}
