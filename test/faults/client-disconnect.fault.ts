/**
 * Case 5. Clients hang up in the middle of their streams. The API (one process) tells the worker (another
 * process) to stop: the upstream call is aborted, and the generation is billed for what the provider produced
 * until then (decisions.md section 4), once: far less than the full answer, the same amount in the record, the
 * ledger and the balance. The API process keeps serving.
 */
import { money } from '../../shared/money';
import { settledAudit } from './helpers/audit';
import { CHAT_PRICE, MODELS, startCluster, type Cluster } from './helpers/cluster';
import { post, stream, Tally } from './helpers/http';
import { Checks } from './helpers/report';

let c: Cluster;

beforeAll(async () => {
  c = await startCluster({ name: 'client-disconnect', env: { SYNC_WAIT_MS: '20000' } });
});
afterAll(async () => {
  await c?.close();
});

const PROMPT_TOKENS = 11;
const COMPLETION_TOKENS = 50;

test('a client that leaves mid-stream: the job finishes and is billed exactly the usage produced', async () => {
  const checks = new Checks('5. client disconnects mid-stream', 'clients hang up after 2 of 10 deltas (responses and chat completions streams, 200 ms between deltas)');
  const api = await c.startApi();
  await c.startWorker();
  await c.warmUp(api);
  c.fake.setKnobs({ streamChunks: 10, chunkDelayMs: 200, promptTokens: PROMPT_TOKENS, completionTokens: COMPLETION_TOKENS });
  const org = await c.seed({ balance: '100' });
  const tally = new Tally();
  const before = c.fake.requests.length;
  const abortedBefore = c.fake.aborted.length;

  const responses = Array.from({ length: 6 }, (_, i) =>
    stream(`${api.url}/v1/responses`, { model: MODELS.chat, input: `leave ${i}`, stream: true, max_output_tokens: 200 }, org.auth, { leaveAfter: 2 }),
  );
  const chats = Array.from({ length: 4 }, (_, i) =>
    stream(`${api.url}/v1/chat/completions`, { model: MODELS.chat, messages: [{ role: 'user', content: `leave chat ${i}` }], stream: true, max_tokens: 200 }, org.auth, { leaveAfter: 2 }),
  );
  const left = await Promise.all([...responses, ...chats]);
  tally.addAll(left);
  checks.that(left.every((s) => s.status === 200 && s.leftEarly && s.deltas === 2), `clients left after 2 deltas: ${left.map((s) => `${s.status}/${s.deltas}/${s.leftEarly}`).join(',')}`);

  const a = await settledAudit(c.db, 20_000);
  const ids = await c.db.generation.findMany({ where: { organizationId: org.organizationId }, select: { id: true, status: true, clientCost: true, usage: true } });
  const full = money(PROMPT_TOKENS).mul(CHAT_PRICE.prompt).plus(money(COMPLETION_TOKENS).mul(CHAT_PRICE.completion)).div(1_000_000);
  checks.that(ids.length === left.length, `generations: ${ids.length}`);
  let total = money(0);
  for (const g of ids) {
    const cost = money(g.clientCost);
    total = total.plus(cost);
    checks.that(g.status === 'failed', `generation ${g.id} ended ${g.status}`);
    checks.that(cost.greaterThan(0) && cost.lessThan(full), `generation ${g.id} charged ${g.clientCost}: expected what 2-3 deltas cost, above 0 and below the full answer ${full} (usage ${JSON.stringify(g.usage)})`);
  }
  const charges = await c.db.ledgerEntry.findMany({ where: { organizationId: org.organizationId, kind: 'charge' } });
  checks.that(charges.length === left.length, `charge entries: ${charges.length}`);
  const charged = charges.reduce((sum, e) => sum.minus(money(e.amount)), money(0));
  checks.that(charged.equals(total), `ledger charged ${charged}, records say ${total}`);
  const spent = (await c.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })).spent;
  checks.that(money(spent).equals(total), `organization spent ${spent}, records say ${total}`);
  // The provider was cut off: every upstream stream saw its connection closed by the worker.
  checks.that(c.fake.requests.length - before === left.length, `upstream calls: ${c.fake.requests.length - before}`);
  await c.fake.waitForAborted(abortedBefore + left.length, 10_000).catch(() => undefined);
  checks.that(c.fake.aborted.length - abortedBefore === left.length, `upstream calls aborted: ${c.fake.aborted.length - abortedBefore} of ${left.length}`);

  const after = await post(`${api.url}/v1/responses`, { model: MODELS.chat, input: 'still serving' }, org.auth);
  tally.add(after);
  checks.that(after.status === 200, `the API still serves: ${after.status}`);
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `${left.length} streams left after 2 deltas; every upstream call was aborted and each generation charged once for what was produced (total ${total.toString()} RUB, full answers would be ${full.mul(left.length).toString()}), records = ledger = balance; API kept serving`,
  });
  if (failures.length) console.error(c.tails(20));
  expect(failures).toEqual([]);
});
