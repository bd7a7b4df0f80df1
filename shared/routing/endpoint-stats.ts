import type { EndpointStats } from './routing.types';

/** One upstream attempt, as recorded by the caller (e.g. in a Redis list per endpoint). */
export interface StatsSample {
  ok: boolean;
  /** Time to first token, ms (successful attempts). */
  ttftMs?: number;
  /** Output tokens per second (successful attempts). */
  tokensPerSecond?: number;
  /** Epoch ms of the attempt. */
  at: number;
  /** Epoch ms before which the endpoint asked not to be called again (its `Retry-After`). */
  retryUntil?: number;
}

export type StatsAggregate = 'median' | 'mean';

/** An endpoint is unhealthy with more than half of its attempts failing over at least this many samples. */
export const UNHEALTHY_FAILURE_RATE = 0.5;
export const UNHEALTHY_MIN_SAMPLES = 10;

/**
 * Samples in the window `[now - windowMs, ...)`. Samples stamped slightly after `now`
 * (clock skew between processes) are kept.
 */
export function samplesInWindow<T extends { at: number }>(samples: readonly T[], now: number, windowMs: number): T[] {
  const from = now - windowMs;
  return samples.filter((s) => Number.isFinite(s.at) && s.at >= from);
}

/**
 * Fold the samples of one endpoint into its rolling statistics:
 * `samples` counts attempts in the window, `failureRate` is failures / attempts,
 * `latencyMs` and `throughput` are the median (or mean) over successful attempts that carry them.
 */
export function foldStats(
  samples: readonly StatsSample[],
  now: number,
  windowMs: number,
  aggregate: StatsAggregate = 'median',
): EndpointStats {
  const inWindow = samplesInWindow(samples, now, windowMs);
  const stats: EndpointStats = { samples: inWindow.length };
  if (inWindow.length === 0) return stats;
  const failures = inWindow.filter((s) => !s.ok).length;
  stats.failureRate = failures / inWindow.length;
  const ok = inWindow.filter((s) => s.ok);
  const latency = aggregateOf(values(ok.map((s) => s.ttftMs)), aggregate);
  if (latency !== undefined) stats.latencyMs = latency;
  const throughput = aggregateOf(values(ok.map((s) => s.tokensPerSecond)), aggregate);
  if (throughput !== undefined) stats.throughput = throughput;
  const retryUntil = Math.max(0, ...inWindow.map((s) => s.retryUntil ?? 0));
  if (retryUntil > now) stats.retryAfterUntil = retryUntil;
  return stats;
}

/**
 * True when the slug is in `unhealthy`, its `Retry-After` has not passed at `now` (it is cooling down), or its stats
 * show failureRate > 0.5 over >= 10 samples.
 */
export function isUnhealthy(slug: string, stats?: EndpointStats, unhealthy?: ReadonlySet<string>, now = Date.now()): boolean {
  if (unhealthy?.has(slug)) return true;
  if (stats === undefined) return false;
  if (stats.retryAfterUntil !== undefined && stats.retryAfterUntil > now) return true;
  return stats.samples >= UNHEALTHY_MIN_SAMPLES && (stats.failureRate ?? 0) > UNHEALTHY_FAILURE_RATE;
}

/** Compact text form of a sample, for a Redis list. */
export function serializeSample(sample: StatsSample): string {
  const out: Record<string, number> = { a: sample.at, o: sample.ok ? 1 : 0 };
  if (sample.ttftMs !== undefined) out.t = sample.ttftMs;
  if (sample.tokensPerSecond !== undefined) out.s = sample.tokensPerSecond;
  if (sample.retryUntil !== undefined) out.r = sample.retryUntil;
  return JSON.stringify(out);
}

/** Inverse of `serializeSample`; `undefined` for anything malformed. */
export function parseSample(text: string): StatsSample | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (!isNum(r.a) || (r.o !== 0 && r.o !== 1)) return undefined;
  const sample: StatsSample = { at: r.a, ok: r.o === 1 };
  if (isNum(r.t)) sample.ttftMs = r.t;
  if (isNum(r.s)) sample.tokensPerSecond = r.s;
  if (isNum(r.r)) sample.retryUntil = r.r;
  return sample;
}

function isNum(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

function values(list: Array<number | undefined>): number[] {
  return list.filter((v): v is number => v !== undefined && Number.isFinite(v) && v >= 0);
}

function aggregateOf(list: number[], aggregate: StatsAggregate): number | undefined {
  if (list.length === 0) return undefined;
  if (aggregate === 'mean') return list.reduce((a, b) => a + b, 0) / list.length;
  const sorted = [...list].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
