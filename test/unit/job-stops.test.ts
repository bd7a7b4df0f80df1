import { getEventListeners } from 'node:events';
import { JobStops, stopReasonOf } from '../../shared/queue/generation-bus';
import { waitFor } from '../../workers/services/attempt-loop';
import { textProcessor } from '../../workers/processors/text.processor';
import { embeddingsProcessor } from '../../workers/processors/embeddings.processor';
import type { WorkerDeps } from '../../workers/worker-deps';
import { claimedRuns } from '../../workers/services/drawn-jobs';
import type { Processor } from 'bullmq';

// The stop signals of running jobs (shared/queue/generation-bus.ts); the stop channel itself, end to end, is
// test/api/upstream-abort.test.ts.

describe('JobStops', () => {
  it('aborts the running job of that id once, with its reason, and tells whether one ran here', () => {
    const stops = new JobStops();
    const stop = stops.start('gen_1');
    const heard: unknown[] = [];
    stop.addEventListener('abort', () => heard.push(stop.reason), { once: true });
    expect(stops.abort('gen_other', 'cancelled')).toBe(false);
    expect(stop.aborted).toBe(false);
    expect(stops.abort('gen_1', 'client_gone')).toBe(true);
    stops.abort('gen_1', 'timeout');
    expect([stop.aborted, stop.reason, heard]).toEqual([true, 'client_gone', ['client_gone']]);
    expect(stopReasonOf(stop)).toBe('client_gone');
  });

  it('forgets a job that ended, and an ended run never removes its re-run', () => {
    const stops = new JobStops();
    const first = stops.start('gen_2');
    const rerun = stops.start('gen_2');
    stops.end('gen_2', first);
    expect(stops.abort('gen_2', 'cancelled')).toBe(true);
    expect([first.aborted, rerun.aborted]).toEqual([false, true]);
    stops.end('gen_2', rerun);
    expect(stops.abort('gen_2', 'cancelled')).toBe(false);
  });

  it('ends a wait early when the job is stopped, and leaves no listener behind', async () => {
    // Jest's clock (promises stay real): the wait ends at the stop, the clock short of its end.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    try {
      const stops = new JobStops();
      const stop = stops.start('gen_3');
      let ended = false;
      const waiting = waitFor(5_000, stop).then(() => void (ended = true));
      await jest.advanceTimersByTimeAsync(4_999);
      expect(ended).toBe(false);
      stops.abort('gen_3', 'cancelled');
      await waiting;
      expect(getEventListeners(stop, 'abort')).toHaveLength(0);
      const untouched = new JobStops().start('gen_4');
      const waited = waitFor(10, untouched);
      await jest.advanceTimersByTimeAsync(10);
      await waited;
      expect([untouched.aborted, getEventListeners(untouched, 'abort').length]).toEqual([false, 0]);
    } finally {
      jest.useRealTimers();
    }
  });

  it('the text and embeddings processors, as BullMQ gets them, take two parameters: it makes no AbortController for their jobs', () => {
    const deps = { stops: new JobStops() } as unknown as WorkerDeps;
    for (const p of [textProcessor(deps), embeddingsProcessor(deps)]) {
      expect(p.length).toBeLessThan(3);
      expect(claimedRuns(deps, p as Processor).length).toBeLessThan(3);
    }
  });
});
