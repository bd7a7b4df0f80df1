import { SLOTS_PER_WORKER, workerSlots } from '../../workers/worker-pool';
import type { WorkerSettings } from '../../shared/config/env';

const settings = (concurrency: WorkerSettings['concurrency']) => ({ concurrency }) as WorkerSettings;

describe('workerSlots: a queue\'s slots spread over BullMQ Workers of at most SLOTS_PER_WORKER', () => {
  it('keeps the total and splits it evenly', () => {
    expect(SLOTS_PER_WORKER).toBe(32);
    expect(workerSlots('text', settings({}))).toEqual([32, 32, 32, 32]); // the catalog default, 128
    expect(workerSlots('text', settings({ text: 100 }))).toEqual([25, 25, 25, 25]);
    expect(workerSlots('text', settings({ text: 33 }))).toEqual([17, 16]);
    expect(workerSlots('text', settings({ text: 32 }))).toEqual([32]);
    expect(workerSlots('media', settings({ media: 1 }))).toEqual([1]);
    for (const n of [1, 5, 31, 64, 65, 200]) {
      const slots = workerSlots('embeddings', settings({ embeddings: n }));
      expect(slots.reduce((a, b) => a + b, 0)).toBe(n);
      expect(Math.max(...slots)).toBeLessThanOrEqual(SLOTS_PER_WORKER);
      expect(Math.max(...slots) - Math.min(...slots)).toBeLessThanOrEqual(1);
    }
  });
});
