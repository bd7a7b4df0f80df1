/**
 * Case 4. A provider that hangs, resets connections, sends malformed JSON or streams forever. Each fault is set
 * on the primary fake; the backup fake stays healthy. What must hold: the timeout fires, a model with a second
 * endpoint falls back to it, a model without one answers a clean 502 (stream: a `response.failed` event), never
 * a 500 or a hang, and no reservation leaks (all charged or released, organizations.reserved back to 0).
 */
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster } from './helpers/cluster';
import { post, stream, Tally, type Reply, type StreamReply } from './helpers/http';
import { Checks } from './helpers/report';
import type { FakeKnobs } from '../../fakes/fake-provider';

const PROVIDER_TIMEOUT_MS = 1500;
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'provider-faults', providerTimeoutMs: PROVIDER_TIMEOUT_MS, env: { SYNC_WAIT_MS: '20000' } });
});
afterAll(async () => {
  await c?.close();
});

interface Outcome {
  what: string;
  ms: number;
  status: number;
  event?: string;
  reason?: string;
  attempt?: string;
}

test('a hanging, resetting, malformed or endless provider: timeout, fallback, clean error, no leaked reservation', async () => {
  const checks = new Checks('4. provider faults', `primary provider hangs (timeout ${PROVIDER_TIMEOUT_MS} ms), resets connections, sends malformed JSON (and broken SSE frames), streams forever; backup provider healthy`);
  const api = await c.startApi();
  await c.startWorker();
  await c.warmUp(api);
  const org = await c.seed({ balance: '1000' });
  const tally = new Tally();
  const outcomes: Outcome[] = [];
  const u = (p: string) => `${api.url}${p}`;
  const text = (model: string, extra: object = {}) => ({ model, input: 'provider fault', max_output_tokens: 64, ...extra });

  const timed = async (what: string, p: Promise<Reply>): Promise<Reply> => {
    const r = await p;
    tally.add(r);
    outcomes.push({ what, ms: r.ms, status: r.status, reason: r.json?.error?.metadata?.reason, attempt: r.json?.error?.metadata?.attempts?.[0]?.reason });
    return r;
  };
  const timedStream = async (what: string, p: Promise<StreamReply>): Promise<StreamReply> => {
    const started = Date.now();
    const s = await p;
    tally.add(s);
    outcomes.push({ what, ms: Date.now() - started, status: s.status, event: s.events[s.events.length - 1], reason: s.final?.response?.error?.metadata?.reason ?? s.final?.error?.metadata?.reason });
    return s;
  };

  const faults: Array<[string, FakeKnobs]> = [
    ['hang', { hang: true }],
    ['reset', { resetConnection: true }],
    ['malformed', { malformed: true }],
  ];
  for (const [name, knobs] of faults) {
    c.fake.setKnobs(knobs);
    const [fbSync, oneSync, fbStream, oneStream, chat, emb, img] = await Promise.all([
      timed(`${name}: fallback sync`, post(u('/v1/responses'), text(MODELS.chatFallback), org.auth)),
      timed(`${name}: single sync`, post(u('/v1/responses'), text(MODELS.chat), org.auth)),
      timedStream(`${name}: fallback stream`, stream(u('/v1/responses'), text(MODELS.chatFallback, { stream: true }), org.auth)),
      timedStream(`${name}: single stream`, stream(u('/v1/responses'), text(MODELS.chat, { stream: true }), org.auth)),
      timed(`${name}: chat completions`, post(u('/v1/chat/completions'), { model: MODELS.chat, messages: [{ role: 'user', content: 'hi' }], max_tokens: 32 }, org.auth)),
      timed(`${name}: embeddings`, post(u('/v1/embeddings'), { model: MODELS.embedding, input: 'provider fault' }, org.auth)),
      timed(`${name}: image`, post(u('/v2/images/generations'), { model: MODELS.image, prompt: 'provider fault' }, org.auth)),
    ]);
    checks.that(fbSync.status === 200 && fbSync.json?.status === 'completed', `${name}: fallback sync answered ${fbSync.status} ${fbSync.text.slice(0, 200)}`);
    for (const [what, r] of [['single sync', oneSync], ['chat completions', chat], ['embeddings', emb], ['image', img]] as const) {
      checks.that(r.status === 502 && r.json?.error?.code === 'BAD_GATEWAY' && r.json?.error?.metadata?.reason === 'all_providers_failed', `${name}: ${what} answered ${r.status} ${r.text.slice(0, 200)}`);
    }
    if (name === 'hang') checks.that(oneSync.json?.error?.metadata?.attempts?.[0]?.reason === 'upstream_timeout', `hang: attempt reason ${JSON.stringify(oneSync.json?.error?.metadata?.attempts)}`);
    // A malformed stream breaks after the first delta reached the client: no fallback then, a clean failure.
    const fbEnd = name === 'malformed' ? ['response.completed', 'response.failed'] : ['response.completed'];
    checks.that(fbStream.status === 200 && fbEnd.includes(fbStream.events[fbStream.events.length - 1]), `${name}: fallback stream ended with ${fbStream.status} ${fbStream.events.slice(-2).join(',')} ${fbStream.text}`);
    checks.that(oneStream.status === 200 && oneStream.events[oneStream.events.length - 1] === 'response.failed', `${name}: single stream ended with ${oneStream.status} ${oneStream.events.slice(-2).join(',')} ${oneStream.text}`);
  }

  // A provider that never stops streaming: the stream is cut (it cannot run past what was reserved), ends with a
  // clean failure, and the charge stays within the reservation.
  c.fake.setKnobs({ endlessStream: true });
  const endless = await Promise.all([
    timedStream('endless: single stream', stream(u('/v1/responses'), text(MODELS.chat, { stream: true }), org.auth, { timeoutMs: 30_000 })),
    timedStream('endless: fallback stream', stream(u('/v1/responses'), text(MODELS.chatFallback, { stream: true }), org.auth, { timeoutMs: 30_000 })),
    timed('endless: sync', post(u('/v1/responses'), text(MODELS.chat), org.auth, 30_000)),
  ]);
  for (const s of endless.slice(0, 2) as StreamReply[]) {
    checks.that(s.status === 200 && s.events[s.events.length - 1] === 'response.failed' && !s.error, `endless stream ended with ${s.status} ${s.events.slice(-1)} ${s.error ?? ''}`);
  }
  checks.that((endless[2] as Reply).status === 200, `endless: sync answered ${(endless[2] as Reply).status}`);
  const overBound = await c.db.$queryRawUnsafe<Array<{ id: string }>>(`SELECT generation_id AS id FROM reservations WHERE charged > amount`);
  checks.that(overBound.length === 0, `charged more than reserved: ${overBound.map((r) => r.id).join(',')}`);
  c.fake.setKnobs({});

  const slowest = Math.max(...outcomes.map((o) => o.ms));
  checks.that(slowest < 20_000, `slowest reply ${slowest} ms`);
  checks.that(tally.count(500) === 0, 'no 500');
  const a = await settledAudit(c.db, 20_000);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `fallback answered 200 for hang/reset/malformed; single-endpoint requests 502 all_providers_failed (hang: upstream_timeout after ~${PROVIDER_TIMEOUT_MS} ms); streams end with response.completed (fallback) or response.failed; endless streams cut with response.failed, charged within the reservation; slowest reply ${slowest} ms; every reservation charged or released, reserved back to 0`,
  });
  if (failures.length) {
    console.error(outcomes.map((o) => JSON.stringify(o)).join('\n'));
    console.error(c.tails(20));
  }
  expect(failures).toEqual([]);
});
