/** Traces as a caller and a collector see them (test/api/tracing*.test.ts). */
import { randomBytes } from 'node:crypto';
import type { OtlpCollector, ReceivedSpan } from '../../fakes/otlp-collector';
import type { TestStack } from './test-stack';
import { waitUntil } from './until';

/** A caller's own trace context: `00-<trace id>-<span id>-01`. */
export function incoming() {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

/** The spans of `traceId` the collector received, once `until` holds for them (both tracers are flushed while waiting). */
export async function traceOf(s: TestStack, collector: OtlpCollector, traceId: string, until: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  const spans = () => collector.spans.filter((x) => x.traceId === traceId);
  // After 15 s, the spans as they are, for the caller's assertions to show.
  return waitUntil(async () => {
    await Promise.all([s.ctx.tracing?.flush(), s.workerDeps.tracing?.flush()]);
    return until(spans()) ? spans() : undefined;
  }, 15_000, 100).catch(spans);
}
