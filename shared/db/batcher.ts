/**
 * Group commit: callers submit items one at a time; the batcher runs them as few batches as possible, one batch
 * in flight at a time. The first item of an idle batcher goes out at once (no added latency when quiet); items
 * arriving while a batch runs form the next one. An item submitted with `hold` (nobody waits on it) lets an idle
 * batcher wait up to `holdMs` for another item to share its batch: the next item that is not held, or the timer,
 * starts it. A waited-on item that arrives while the batch in flight carries held items only (most often one the
 * timer started) does not queue behind its commit: it starts one batch beside it (at most one), which the database
 * orders by its row locks. Items with the same key never share a batch, so each caller
 * gets the result of its own item. A failed batch is retried item by item to isolate the one that failed
 * (safe: a batch is one transaction, and every item's operation is idempotent).
 */
export class Batcher<I, O> {
  private readonly queue: Array<{ item: I; held: boolean; resolve: (o: O) => void; reject: (e: unknown) => void }> = [];
  private running = false;
  /** The running loop's batch in flight carries only held items. */
  private heldInFlight = false;
  /** A batch runs beside the loop's. */
  private beside = false;
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
        if (!held && this.heldInFlight && !this.beside) void this.runBeside();
        return;
      }
      if (held && this.holdMs > 0) {
        this.holding ??= setTimeout(() => {
          this.holding = undefined;
          if (!this.running) void this.drain();
        }, this.holdMs);
        return;
      }
      void this.drain();
    });
  }

  private take() {
    const batch: typeof this.queue = [];
    const keys = new Set<string>();
    for (let i = 0; i < this.queue.length && batch.length < this.maxBatch; ) {
      const key = this.keyOf(this.queue[i].item);
      if (keys.has(key)) {
        i++;
        continue;
      }
      keys.add(key);
      batch.push(...this.queue.splice(i, 1));
    }
    return batch;
  }

  private async drain(): Promise<void> {
    this.running = true;
    clearTimeout(this.holding);
    this.holding = undefined;
    try {
      while (this.queue.length) {
        const batch = this.take();
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
    this.beside = true;
    try {
      await this.settle(this.take());
    } finally {
      this.beside = false;
      if (!this.running && this.queue.length) void this.drain();
    }
  }

  private async settle(batch: typeof this.queue): Promise<void> {
    try {
      const out = await this.run(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(out[i]));
    } catch (e) {
      if (batch.length === 1) batch[0].reject(e);
      else {
        for (const b of batch) {
          try {
            b.resolve((await this.run([b.item]))[0]);
          } catch (err) {
            b.reject(err);
          }
        }
      }
    }
  }
}
