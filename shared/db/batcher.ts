/**
 * Group commit: callers submit items one at a time; the batcher runs them as few batches as possible, one batch
 * in flight at a time. The first item of an idle batcher goes out at once (no added latency when quiet); items
 * arriving while a batch runs form the next one. Items submitted with `hold` (nobody waits on them) wait up to
 * `holdMs` for another item to share their batch, whether they come to an idle batcher or are all that is left when
 * a batch ends: the next item that is not held, or the timer, starts it. A waited-on item that arrives while the
 * batch in flight carries held items only (most often one the timer started) does not queue behind its commit: it
 * starts one batch beside it (at most one), which the database orders by its row locks. Items with the same key never
 * share a batch, nor run in two batches at once (an item waits while an earlier one of its key is in the batch
 * beside), so each caller gets the result of its own item, and a key's items commit in the order they were
 * submitted. A failed batch is retried item by item to isolate the one that failed (safe: a batch is one
 * transaction, and every item's operation is idempotent).
 */
export class Batcher<I, O> {
  private readonly queue: Array<{ item: I; held: boolean; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private running = false;
  /** The running loop's batch in flight carries only held items. */
  private heldInFlight = false;
  /** A batch runs beside the loop's: settled when it ends. */
  private beside?: Promise<void>;
  /** Keys of the items in the batches in flight. */
  private readonly flying = new Set<string>();
  private holding?: NodeJS.Timeout;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly keyOf: (item: I) => string,
    private readonly maxBatch = 256,
    private readonly holdMs = 0,
  ) {}

  submit(item: I, opts: { hold?: boolean } = {}): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const held = opts.hold === true;
      this.queue.push({ item, held, resolve, reject });
      if (this.running) {
        if (!held && this.heldInFlight && !this.beside) this.beside = this.runBeside();
        return;
      }
      if (held && this.holdMs > 0) return this.hold();
      void this.drain();
    });
  }

  /** Held items only wait (the batcher is idle): the next item not held, or the timer, starts their batch. */
  private hold(): void {
    this.holding ??= setTimeout(() => {
      this.holding = undefined;
      if (!this.running) void this.drain(true);
    }, this.holdMs);
  }

  private take() {
    const batch: typeof this.queue = [];
    const keys = new Set<string>();
    for (let i = 0; i < this.queue.length && batch.length < this.maxBatch; ) {
      const key = this.keyOf(this.queue[i].item);
      if (keys.has(key) || this.flying.has(key)) {
        i++;
        continue;
      }
      keys.add(key);
      batch.push(...this.queue.splice(i, 1));
    }
    for (const key of keys) this.flying.add(key);
    return batch;
  }

  /** Runs batches while items queue; `timed`: the hold ran out, so held items go even alone. */
  private async drain(timed = false): Promise<void> {
    this.running = true;
    clearTimeout(this.holding);
    this.holding = undefined;
    try {
      for (let first = true; this.queue.length; first = false) {
        // Held items left once a batch ends (queued while it ran) wait for company as on an idle batcher.
        if (!(first && timed) && this.holdMs > 0 && this.queue.every((q) => q.held)) {
          this.hold();
          break;
        }
        const batch = this.take();
        if (batch.length === 0) {
          // Every item queued waits for one of its key in the batch beside.
          await (this.beside ?? new Promise((r) => setImmediate(r)));
          continue;
        }
        this.heldInFlight = batch.every((b) => b.held);
        try {
          await this.settle(batch);
        } finally {
          this.heldInFlight = false;
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** One batch beside the loop's batch of held items; what queues meanwhile goes to the loop. */
  private async runBeside(): Promise<void> {
    try {
      const batch = this.take();
      if (batch.length) await this.settle(batch);
    } finally {
      this.beside = undefined;
      if (!this.running && this.queue.length) void this.drain();
    }
  }

  private async settle(batch: typeof this.queue): Promise<void> {
    let out: O[] | undefined;
    let error: unknown;
    try {
      out = await this.run(batch.map((b) => b.item));
    } catch (e) {
      error = e;
    }
    if (out) {
      this.land(batch);
      batch.forEach((b, i) => b.resolve(out[i]));
    } else if (batch.length === 1) {
      this.land(batch);
      batch[0].reject(error);
    } else {
      for (const b of batch) {
        try {
          const r = (await this.run([b.item]))[0];
          this.land([b]);
          b.resolve(r);
        } catch (err) {
          this.land([b]);
          b.reject(err);
        }
      }
    }
  }

  /** Items whose batch has ended: their keys may run again. */
  private land(items: typeof this.queue): void {
    for (const b of items) this.flying.delete(this.keyOf(b.item));
  }
}
