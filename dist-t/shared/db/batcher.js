"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Batcher = void 0;
/**
 * Group commit: callers submit items one at a time; the batcher runs them as few batches as possible, one batch
 * in flight at a time. The first item of an idle batcher goes out at once (no added latency when quiet); items
 * arriving while a batch runs form the next one. Items with the same key never share a batch, so each caller
 * gets the result of its own item. A failed batch is retried item by item to isolate the one that failed
 * (safe: a batch is one transaction, and every item's operation is idempotent).
 */
class Batcher {
    run;
    keyOf;
    maxBatch;
    queue = [];
    running = false;
    constructor(run, keyOf, maxBatch = 256) {
        this.run = run;
        this.keyOf = keyOf;
        this.maxBatch = maxBatch;
    }
    submit(item) {
        return new Promise((resolve, reject) => {
            this.queue.push({ item, resolve, reject });
            if (!this.running)
                void this.drain();
        });
    }
    take() {
        const batch = [];
        const keys = new Set();
        for (let i = 0; i < this.queue.length && batch.length < this.maxBatch;) {
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
    async drain() {
        this.running = true;
        try {
            while (this.queue.length) {
                const batch = this.take();
                try {
                    const out = await this.run(batch.map((b) => b.item));
                    batch.forEach((b, i) => b.resolve(out[i]));
                }
                catch (e) {
                    if (batch.length === 1)
                        batch[0].reject(e);
                    else {
                        for (const b of batch) {
                            try {
                                b.resolve((await this.run([b.item]))[0]);
                            }
                            catch (err) {
                                b.reject(err);
                            }
                        }
                    }
                }
            }
        }
        finally {
            this.running = false;
        }
    }
}
exports.Batcher = Batcher;
