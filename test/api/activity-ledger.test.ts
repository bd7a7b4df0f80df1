/**
 * Activity equals the ledger (decisions.md section 8; issue 41 item 3): a day of mixed traffic through the real stack
 * (API, workers, the fake provider) — completed calls of three kinds, provider failures, a 408 that cancels its job, a
 * stream cut by its client, a stream its provider cut, a background stream cancelled mid-way, a batch — and then GET
 * /v1/activity, summed, equals the ledger's charges to the kopeck (to the micro-rouble, its precision), overall, by key
 * and by member, and counts every generation that ended.
 */
import { request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import request from 'supertest';
import { money, type Decimal } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { chatLines } from '../helpers/batch-driving';
import { waitFor } from '../helpers/until';

let s: TestStack;
let org: StackOrg;
let member: { userId: string; token: string };
let memberKey: { id: string; key: string };

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '3000', BATCH_POLL_MS: '50' } });
  org = await s.seed({ balance: '1000' });
  member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@mixed.test', role: 'member' });
  memberKey = await org.accounts.createKey({ organizationId: org.organizationId, userId: member.userId, name: 'member key' });
});
afterAll(() => s.close());
afterEach(() => s.fake.setKnobs({}));

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const chat = (auth: Record<string, string>, body: object = {}) => request(s.app).post('/v1/chat/completions').set(auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hello there' }], ...body });

/** A chat stream over a real socket whose client hangs up after `after` chunks. */
function cutByClient(auth: Record<string, string>, after: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let chunks = 0;
    const req = httpRequest(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' } }, (res) => {
      res.on('data', () => {
        if (++chunks === after) {
          req.destroy();
          resolve();
        }
      });
      res.on('end', () => resolve());
      res.on('error', () => resolve());
    });
    req.on('error', (e) => (chunks >= after ? resolve() : reject(e)));
    req.end(JSON.stringify({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'a long story' }], stream: true }));
  });
}

async function ledgerCharges(column: 'organization_id' | 'api_key_id' | 'user_id', value: string): Promise<Decimal> {
  const [r] = await s.t.db.$queryRawUnsafe<Array<{ s: string }>>(`SELECT COALESCE(SUM(-amount), 0)::text AS s FROM ledger_entries WHERE kind = 'charge' AND ${column} = $1`, value);
  return money(r.s);
}
async function activity(token: string, query = '') {
  const res = await request(s.app).get(`/v1/activity${query}`).set(bearer(token));
  expect(res.status).toBe(200);
  const items = res.body.data as Array<{ usage: number; requests: number; prompt_tokens: number; endpoint_id: string }>;
  return { items, usage: items.reduce((a, i) => a.plus(i.usage), money(0)), requests: items.reduce((n, i) => n + i.requests, 0) };
}

it('a day of mixed traffic: activity equals the ledger, overall, by key and by member, and counts every ending', async () => {
  // Completed: chat, another provider's chat, embeddings; by the owner's key, the member's key and the member's token.
  for (let i = 0; i < 3; i++) expect((await chat(org.auth, { messages: [{ role: 'user', content: `question ${i}` }] })).status).toBe(200);
  expect((await chat(bearer(memberKey.key), { model: STACK_MODELS.chatAnthropic })).status).toBe(200);
  expect((await request(s.app).post('/v1/embeddings').set(bearer(memberKey.key)).send({ model: STACK_MODELS.embedding, input: 'embed me' })).status).toBe(200);
  expect((await chat(bearer(member.token))).status).toBe(200);
  // Failed at the provider, free.
  s.fake.setKnobs({ status: 400 });
  expect((await chat(org.auth)).status).toBe(400);
  s.fake.setKnobs({});
  // Cancelled by the 408 of a synchronous wait (SYNC_WAIT_MS 3 s), free.
  s.fake.setKnobs({ latencyMs: 4500 });
  expect((await chat(bearer(memberKey.key))).status).toBe(408);
  s.fake.setKnobs({});
  // A stream cut by its client after two chunks: charged what was produced.
  s.fake.setKnobs({ streamChunks: 40, chunkDelayMs: 50 });
  await cutByClient(org.auth, 3);
  // A stream its provider cut half-way.
  s.fake.setKnobs({ failMidStream: true, streamChunks: 10, text: 'one two three four five six seven eight nine ten' });
  await request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'cut me' }], stream: true });
  // A background stream cancelled after some deltas.
  s.fake.setKnobs({ streamChunks: 50, chunkDelayMs: 50, completionTokens: 5000 });
  const client = new OpenAI({ apiKey: memberKey.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
  const stream = await client.responses.create({ model: STACK_MODELS.chat, input: 'Tell me a story', stream: true, background: true, max_output_tokens: 400 });
  let deltas = 0;
  let responseId = '';
  let cancel: Promise<unknown> | undefined;
  for await (const ev of stream) {
    responseId ||= (ev as unknown as { response?: { id: string } }).response?.id ?? '';
    if (ev.type === 'response.output_text.delta' && ++deltas === 3) cancel = client.responses.cancel(responseId);
  }
  await cancel;
  s.fake.setKnobs({});
  // A batch of five lines.
  const file = await request(s.app).post('/v1/files').set(org.auth).field('purpose', 'batch').attach('file', Buffer.from(chatLines(5, 'mixed').map((l) => JSON.stringify(l)).join('\n')), 'in.jsonl');
  const batch = await request(s.app).post('/v1/batches').set(org.auth).send({ input_file_id: file.body.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  expect(batch.status).toBe(200);
  await waitFor('the batch to end', async () => (await request(s.app).get(`/v1/batches/${batch.body.id}`).set(org.auth)).body.status === 'completed', 60_000);

  // Every generation ended and settled.
  await waitFor('every generation to end', async () => (await s.t.db.generation.count({ where: { organizationId: org.organizationId, status: { in: ['pending', 'processing'] } } })) === 0, 30_000);
  await s.settled(org.organizationId);
  const ended = await s.t.db.generation.groupBy({ by: ['status'], where: { organizationId: org.organizationId }, _count: true });
  const byStatus = Object.fromEntries(ended.map((g) => [g.status, g._count]));
  expect(byStatus.completed).toBeGreaterThanOrEqual(11);
  expect(byStatus.failed).toBeGreaterThanOrEqual(1);
  expect(byStatus.cancelled).toBeGreaterThanOrEqual(2);
  const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
  // Endings that were charged although not completed (the cut streams, the cancelled one), and free ones.
  const paid = (status: 'failed' | 'cancelled') => s.t.db.generation.count({ where: { organizationId: org.organizationId, status, clientCost: { gt: 0 } } });
  expect((await paid('failed')) + (await paid('cancelled'))).toBeGreaterThanOrEqual(2);
  expect(await s.t.db.generation.count({ where: { organizationId: org.organizationId, status: { not: 'completed' }, clientCost: 0 } })).toBeGreaterThanOrEqual(2);

  const all = await activity(org.ownerToken);
  const charged = await ledgerCharges('organization_id', org.organizationId);
  expect(charged.greaterThan(0)).toBe(true);
  // Each item is shown to 6 places: the sum may differ from the ledger by half a micro-rouble an item, never a kopeck.
  expect(all.usage.minus(charged).abs().lessThanOrEqualTo(money('0.0000005').times(all.items.length))).toBe(true);
  expect(all.usage.toFixed(2)).toBe(charged.toFixed(2));
  expect(all.requests).toBe(total);
  // The totals themselves hold the ledger's exact figure.
  const [exact] = await s.t.db.$queryRaw<Array<{ s: string }>>`SELECT SUM(usage)::text AS s FROM activity_totals WHERE organization_id = ${org.organizationId}`;
  expect(money(exact.s).equals(charged)).toBe(true);
  const [whole] = await s.t.db.$queryRaw<Array<{ s: string; n: string }>>`SELECT SUM(usage)::text AS s, SUM(requests)::text AS n FROM activity_org_totals WHERE organization_id = ${org.organizationId}`;
  expect(money(whole.s).equals(charged)).toBe(true);
  expect(Number(whole.n)).toBe(total);

  const byOwnerKey = await activity(org.ownerToken, `?api_key_id=${org.key.id}`);
  expect(byOwnerKey.usage.toFixed(6)).toBe((await ledgerCharges('api_key_id', org.key.id)).toFixed(6));
  const byMember = await activity(member.token);
  expect(byMember.usage.toFixed(6)).toBe((await ledgerCharges('user_id', member.userId)).toFixed(6));
  expect(byMember.requests).toBe(await s.t.db.generation.count({ where: { userId: member.userId } }));
  const ownKey = await activity(memberKey.key);
  expect(ownKey.usage.toFixed(6)).toBe((await ledgerCharges('api_key_id', memberKey.id)).toFixed(6));
  // Tokens: the recorded usage's input, summed.
  const gens = await s.t.db.generation.findMany({ where: { organizationId: org.organizationId }, select: { usage: true } });
  const input = gens.reduce((n, g) => n + (((g.usage as { inputTokens?: number } | null)?.inputTokens) ?? 0), 0);
  expect(all.items.reduce((n, i) => n + i.prompt_tokens, 0)).toBe(input);
}, 120_000);
