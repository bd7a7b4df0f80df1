import { foldStats, isUnhealthy, parseSample, samplesInWindow, serializeSample, type StatsSample } from '../../../shared/routing/endpoint-stats';

const NOW = 1_700_000_000_000;
const WINDOW = 5 * 60_000;

describe('foldStats', () => {
  it('is empty without samples in the window', () => {
    expect(foldStats([], NOW, WINDOW)).toEqual({ samples: 0 });
    expect(foldStats([{ ok: true, ttftMs: 100, at: NOW - WINDOW - 1 }], NOW, WINDOW)).toEqual({ samples: 0 });
  });

  it('takes the median over successful samples in the window and the failure rate over all', () => {
    const samples: StatsSample[] = [
      { ok: true, ttftMs: 100, tokensPerSecond: 50, at: NOW - 1000 },
      { ok: true, ttftMs: 300, tokensPerSecond: 70, at: NOW - 2000 },
      { ok: true, ttftMs: 200, at: NOW - WINDOW }, // edge of the window: in
      { ok: false, ttftMs: 5000, at: NOW - 3000 }, // failures do not count for latency
      { ok: true, ttftMs: 99999, tokensPerSecond: 1, at: NOW - WINDOW - 1 }, // out
    ];
    expect(foldStats(samples, NOW, WINDOW)).toEqual({ samples: 4, failureRate: 0.25, latencyMs: 200, throughput: 60 });
  });

  it('can take the mean', () => {
    const samples: StatsSample[] = [
      { ok: true, ttftMs: 100, tokensPerSecond: 10, at: NOW },
      { ok: true, ttftMs: 400, tokensPerSecond: 40, at: NOW },
      { ok: true, ttftMs: 100, tokensPerSecond: 10, at: NOW },
    ];
    expect(foldStats(samples, NOW, WINDOW, 'mean')).toEqual({ samples: 3, failureRate: 0, latencyMs: 200, throughput: 20 });
  });

  it('keeps samples stamped slightly after now (clock skew) and leaves out absent metrics', () => {
    expect(foldStats([{ ok: false, at: NOW + 50 }], NOW, WINDOW)).toEqual({ samples: 1, failureRate: 1 });
    expect(samplesInWindow([{ at: NOW + 50 }, { at: NaN }], NOW, WINDOW)).toHaveLength(1);
  });
});

describe('isUnhealthy', () => {
  it('uses the explicit set or failureRate > 0.5 with at least 10 samples', () => {
    expect(isUnhealthy('a', undefined, new Set(['a']))).toBe(true);
    expect(isUnhealthy('a', { samples: 10, failureRate: 0.6 })).toBe(true);
    expect(isUnhealthy('a', { samples: 10, failureRate: 0.5 })).toBe(false);
    expect(isUnhealthy('a', { samples: 9, failureRate: 1 })).toBe(false);
    expect(isUnhealthy('a', undefined)).toBe(false);
  });
});

describe('sample serialization', () => {
  it('round-trips and rejects garbage', () => {
    const s: StatsSample = { ok: true, ttftMs: 120, tokensPerSecond: 33.5, at: NOW };
    expect(parseSample(serializeSample(s))).toEqual(s);
    expect(parseSample(serializeSample({ ok: false, at: NOW }))).toEqual({ ok: false, at: NOW });
    expect(parseSample('not json')).toBeUndefined();
    expect(parseSample('null')).toBeUndefined();
    expect(parseSample('{"a":"x","o":1}')).toBeUndefined();
    expect(parseSample('{"a":1,"o":2}')).toBeUndefined();
  });
});
