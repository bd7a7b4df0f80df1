/**
 * Case 22. Traces across processes (docs/observability.md): an API process and a worker process, each with tracing on
 * under its own service name, export to one OTLP/HTTP receiver. What must hold: every span of a request, the API's
 * and the worker's, is in the trace of the caller's `traceparent`; the request span is the caller span's child and
 * the worker's spans (queue wait, provider attempts, settlement) are the request span's; a first attempt that fails
 * and falls back shows as two attempt spans, the first with error status; the settlement carries the cost the reply
 * and the history show.
 */
import { randomBytes } from 'node:crypto';
import { startOtlpCollector, type OtlpCollector, type ReceivedSpan } from '../../fakes/otlp-collector';
import { MODELS, useCluster } from './helpers/cluster';
import { get, post, stream, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { pause } from '../helpers/until';

let collector: OtlpCollector;
beforeAll(async () => {
  collector = await startOtlpCollector();
});
afterAll(() => collector.close());
const cluster = useCluster({ name: 'tracing', env: { SYNC_WAIT_MS: '20000' } });

/** The spans of `traceId` once the settlement is among them and nothing more arrives for 1.5 s (exports are batched every second). */
async function traceOf(traceId: string): Promise<ReceivedSpan[]> {
  const spans = () => collector.spans.filter((s) => s.traceId === traceId);
  await waitFor('the settlement span', async () => spans().some((s) => s.name === 'switchyard.settle'), 15_000).catch(() => undefined);
  // A window with no new span: no export is on its way any more.
  for (let seen = -1; spans().length !== seen; ) {
    seen = spans().length;
    await pause(1500);
  }
  return spans();
}

it('22. an API and a worker process export one trace per request under the caller traceparent', async () => {
  const c = cluster();
  const checks = new Checks(
    '22. traces across processes',
    '1 API + 1 worker process with OTEL_EXPORTER_OTLP_ENDPOINT at a fake OTLP/HTTP receiver (service names switchyard-api, switchyard-worker); a sync chat completion, a streamed one and one whose first provider attempt fails (fallback), each with a caller traceparent',
  );
  const tally = new Tally();
  const otel = (service: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: service });
  const api = await c.startApi(otel('switchyard-api'));
  await c.startWorker(otel('switchyard-worker'));
  await c.waitForWorkers(1);
  const org = await c.seed({ balance: '100' });
  const holds: string[] = [];

  const cases = [
    { name: 'sync', model: MODELS.chat, streamed: false, attempts: 1 },
    { name: 'stream', model: MODELS.chat, streamed: true, attempts: 1 },
    { name: 'fallback', model: MODELS.chatFallback, streamed: false, attempts: 2 },
  ];
  for (const k of cases) {
    const traceId = randomBytes(16).toString('hex');
    const parent = randomBytes(8).toString('hex');
    const headers = { ...org.auth, traceparent: `00-${traceId}-${parent}-01` };
    const body = { model: k.model, messages: [{ role: 'user', content: `trace ${k.name}` }], ...(k.streamed && { stream: true }) };
    if (k.attempts === 2) c.fake.setKnobs({ status: 500, failTimes: 1 });
    let id: string | undefined;
    if (k.streamed) {
      const s = await stream(`${api.url}/v1/chat/completions`, body, headers);
      tally.add(s);
      checks.that(s.status === 200, `${k.name}: status ${s.status}`);
    } else {
      const r = await post(`${api.url}/v1/chat/completions`, body, headers);
      tally.add(r);
      id = r.json?.id;
      checks.that(r.status === 200, `${k.name}: status ${r.status} ${r.text.slice(0, 200)}`);
    }
    c.fake.setKnobs({});

    const spans = await traceOf(traceId);
    const req = spans.filter((s) => s.kind === 2);
    const attempts = spans.filter((s) => s.kind === 3).sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
    const wait = spans.filter((s) => s.name === 'switchyard.queue_wait');
    const settle = spans.filter((s) => s.name === 'switchyard.settle');
    const reqId = req[0]?.spanId;
    checks.that(req.length === 1 && req[0]!.parentSpanId === parent && req[0]!.service === 'switchyard-api', `${k.name}: request span ${JSON.stringify(req.map((s) => [s.name, s.parentSpanId, s.service]))}`);
    checks.that(wait.length === 1 && wait[0]!.parentSpanId === reqId && wait[0]!.service === 'switchyard-worker', `${k.name}: queue wait spans ${wait.length}`);
    checks.that(attempts.length === k.attempts && attempts.every((a) => a.parentSpanId === reqId && a.service === 'switchyard-worker'), `${k.name}: attempt spans ${attempts.length}, want ${k.attempts}`);
    const last = attempts[attempts.length - 1];
    checks.that(last?.status.code !== 2 && typeof last?.attributes['gen_ai.usage.output_tokens'] === 'number' && last?.attributes['gen_ai.request.model'] !== undefined, `${k.name}: answering attempt ${JSON.stringify(last?.attributes)}`);
    if (k.attempts === 2) checks.that(attempts[0]?.status.code === 2 && attempts[0]?.attributes['error.type'] === 'provider_error', `${k.name}: first attempt ${JSON.stringify(attempts[0]?.status)} ${JSON.stringify(attempts[0]?.attributes)}`);
    // A stream's chunks are not kept by the client helper: its generation is the one its spans name.
    id ??= settle[0]?.attributes['switchyard.generation_id'] as string | undefined;
    const detail = id ? await get(`${api.url}/v1/history/generations/${id}`, org.auth) : undefined;
    const cost = Number(detail?.json?.clientCost ?? detail?.json?.cost ?? NaN);
    checks.that(settle.length === 1 && settle[0]!.parentSpanId === reqId && settle[0]!.service === 'switchyard-worker' && Math.abs(Number(settle[0]!.attributes['switchyard.cost_rub']) - cost) < 1e-9, `${k.name}: settlement ${JSON.stringify(settle.map((s) => s.attributes))}, history cost ${cost}`);
    holds.push(`${k.name}: ${spans.length} spans in the caller's trace (request ${req.length}, queue wait ${wait.length}, attempts ${attempts.length}${k.attempts === 2 ? ', the first failed' : ''}, settlement ${settle.length} at ${cost} RUB)`);
  }

  const failures = checks.finish({ requests: tally.total, errors: tally.errors(), moneyLost: '0', holds: `${holds.join('; ')}; API spans from switchyard-api, worker spans from switchyard-worker` });
  expect(failures).toEqual([]);
});
