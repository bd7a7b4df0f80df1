import { foldStats, isUnhealthy, parseSample, serializeSample } from '../../../shared/routing/endpoint-stats';
import { AttemptOrder, RETRY_AFTER_MAX_WAIT_MS } from '../../../workers/services/attempt-loop';
import { retryAfterSeconds } from '../../../workers/services/attempt-failures';

const NOW = 1_700_000_000_000;

describe('Retry-After in the endpoint statistics', () => {
  it('a failed sample keeps its Retry-After through the Redis text form', () => {
    const sample = { ok: false, at: NOW, retryUntil: NOW + 30_000 };
    expect(parseSample(serializeSample(sample))).toEqual(sample);
  });

  it('folds the latest Retry-After still ahead; the endpoint counts as unhealthy until then', () => {
    const stats = foldStats([{ ok: true, at: NOW - 1000 }, { ok: false, at: NOW - 500, retryUntil: NOW + 20_000 }, { ok: false, at: NOW - 400, retryUntil: NOW + 5_000 }], NOW, 60_000);
    expect(stats.retryAfterUntil).toBe(NOW + 20_000);
    expect(isUnhealthy('a', stats, undefined, NOW)).toBe(true);
    expect(isUnhealthy('a', stats, undefined, NOW + 20_001)).toBe(false);
    expect(foldStats([{ ok: false, at: NOW - 500, retryUntil: NOW - 1 }], NOW, 60_000).retryAfterUntil).toBeUndefined();
  });
});

describe('AttemptOrder', () => {
  const c = (slug: string) => ({ slug });
  const clock = { now: NOW };
  const order = (slugs: string[], until: Record<string, number>) => new AttemptOrder(slugs.map(c), (s) => until[s] ?? 0, () => clock.now);

  it('keeps the planned order when nobody asked to wait', () => {
    const o = order(['a', 'b'], {});
    expect(o.next()).toEqual({ candidate: c('a'), waitMs: 0 });
    expect(o.next()).toEqual({ candidate: c('b'), waitMs: 0 });
    expect(o.next()).toBeUndefined();
  });

  it('tries an endpoint that asked to wait after every other one', () => {
    const o = order(['a', 'b'], { a: NOW + 60_000 });
    expect(o.next()).toEqual({ candidate: c('b'), waitMs: 0 });
    expect(o.next()).toEqual({ candidate: c('a'), skipMs: 60_000 });
  });

  it('waits for the last one when its Retry-After is within the bound, skips it beyond', () => {
    expect(order(['a'], { a: NOW + 1500 }).next()).toEqual({ candidate: c('a'), waitMs: 1500 });
    expect(order(['a'], { a: NOW + RETRY_AFTER_MAX_WAIT_MS + 1 }).next()).toEqual({ candidate: c('a'), skipMs: RETRY_AFTER_MAX_WAIT_MS + 1 });
  });

  it('tries the last hope once more after its own short Retry-After, never twice', () => {
    const until: Record<string, number> = {};
    const o = order(['a'], until);
    expect(o.next()).toEqual({ candidate: c('a'), waitMs: 0 });
    until.a = NOW + 1000;
    o.failedWithRetryAfter(c('a'), 1000);
    expect(o.next()).toEqual({ candidate: c('a'), waitMs: 1000 });
    o.failedWithRetryAfter(c('a'), 1000);
    expect(o.next()).toBeUndefined();
  });

  it('does not retry when another endpoint is still to be tried, or the wait is too long', () => {
    const o = order(['a', 'b'], {});
    o.next();
    o.failedWithRetryAfter(c('a'), 1000);
    expect(o.next()).toEqual({ candidate: c('b'), waitMs: 0 });
    expect(o.next()).toBeUndefined();
    const long = order(['a'], {});
    long.next();
    long.failedWithRetryAfter(c('a'), RETRY_AFTER_MAX_WAIT_MS + 1);
    expect(long.next()).toBeUndefined();
  });

  it('the error Retry-After is the soonest any endpoint accepts calls again, in whole seconds', () => {
    expect(retryAfterSeconds(['a', 'b'], (s) => (s === 'a' ? NOW + 30_000 : NOW + 12_100), NOW)).toBe(13);
    expect(retryAfterSeconds(['a'], () => 0, NOW)).toBeUndefined();
  });
});
