/**
 * Case 10. A client with an Idempotency-Key retries while the worker running its generation is killed
 * (SIGKILL). Its first call times out (408: the generation keeps running), the repeats join the same generation,
 * which completes once a new worker takes over the stalled job: one generation, one upstream answer delivered,
 * one charge, and the reply the client finally gets is that generation's.
 */
import { money } from '../../shared/money';
import { settledAudit } from './helpers/audit';
import { CHAT_PRICE, MODELS, startCluster, type Cluster } from './helpers/cluster';
import { post, Tally, type Reply } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';

let c: Cluster;

beforeAll(async () => {
  // A short synchronous wait, so the client sees 408s and repeats, as an SDK user would.
  c = await startCluster({ name: 'idempotency', env: { SYNC_WAIT_MS: '3000' } });
});
afterAll(async () => {
  await c?.close();
});

test('a retry with the same Idempotency-Key after the worker died mid-job gets the same generation, charged once', async () => {
  const checks = new Checks('10. Idempotency-Key retry across a worker SIGKILL', 'SIGKILL of the only worker while a keyed synchronous text job runs (held inside its provider call, SYNC_WAIT_MS 3 s; the call run again 2.5 s); the client repeats with the same key until it gets an answer; a new worker starts once the killed one has exited');
  const api = await c.startApi();
  const w1 = await c.startWorker();
  await c.warmUp(api);
  const knobs = { latencyMs: 2500, promptTokens: 1000, completionTokens: 500 };
  c.fake.setKnobs({ ...knobs, holdReplies: true });
  const org = await c.seed({ balance: '100' });
  const tally = new Tally();
  const headers = { ...org.auth, 'Idempotency-Key': 'order-4711-summary' };
  const body = { model: MODELS.chat, input: 'summarise order 4711', max_output_tokens: 600 };
  const calls = () => c.fake.requests.filter((r) => r.method === 'POST').length;
  const callsBefore = calls();

  const first = post(`${api.url}/v1/responses`, body, headers);
  // Killed inside the provider call: the request has reached the fake, the answer has not come back.
  await waitFor('the job inside its provider call', async () => (await c.queues.text.getActiveCount()) >= 1 && calls() > callsBefore);
  w1.kill('SIGKILL');
  await w1.exited;
  c.fake.setKnobs(knobs);
  const firstReply = await first;
  await c.startWorker();

  // The client repeats on 408 (the generation keeps running), as the 408's message tells it to.
  const replies: Reply[] = [firstReply];
  for (let i = 0; i < 20 && replies[replies.length - 1].status !== 200; i++) replies.push(await post(`${api.url}/v1/responses`, body, headers));
  tally.addAll(replies);
  const last = replies[replies.length - 1];
  const id = firstReply.json?.error?.metadata?.generation_id ?? firstReply.json?.id;

  checks.that(firstReply.status === 408 && firstReply.headers?.get('x-should-retry') === 'true', `first reply: ${firstReply.status} ${firstReply.text.slice(0, 200)}`);
  checks.that(typeof firstReply.json?.error?.message === 'string' && firstReply.json.error.message.includes(`generation ${id} keeps running`), `408 message names the generation: ${firstReply.text.slice(0, 300)}`);
  checks.that(last.status === 200 && last.json?.status === 'completed' && last.json?.id === id, `final reply: ${last.status} ${last.text.slice(0, 200)}`);
  checks.that(replies.slice(1).every((r) => r.status === 200 || r.status === 408), `repeats: ${replies.map((r) => r.status).join(',')}`);

  const a = await settledAudit(c.db, 30_000);
  const gens = await c.db.generation.findMany({ where: { organizationId: org.organizationId } });
  checks.that(gens.length === 1 && gens[0].id === id && gens[0].status === 'completed', `generations of the org: ${gens.map((g) => `${g.id}:${g.status}`).join(',')}`);
  const charges = await c.db.ledgerEntry.count({ where: { organizationId: org.organizationId, kind: 'charge' } });
  checks.that(charges === 1, `charges: ${charges}`);
  const o = await c.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
  const cost = money(1000 * CHAT_PRICE.prompt + 500 * CHAT_PRICE.completion).div(1_000_000);
  checks.that(money(100).minus(money(o.balance)).equals(cost), `charged ${money(100).minus(money(o.balance))} RUB, expected ${cost}`);
  checks.that(money(o.reserved).isZero(), `still reserved: ${o.reserved}`);

  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `${replies.length} calls with one key (${replies.map((r) => r.status).join(',')}); ${gens.length} generation, ${charges} charge of ${cost} RUB; ${calls() - callsBefore} upstream calls (the killed one and the stalled job's re-run)`,
  });
  if (failures.length) console.error(c.tails());
  expect(failures).toEqual([]);
});
