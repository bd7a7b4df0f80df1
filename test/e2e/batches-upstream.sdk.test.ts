/**
 * Provider batch APIs (docs/batches.md "Provider batch APIs"), driven by the official openai Node SDK against the
 * in-process stack: lines routed first to an endpoint with `batch` prices go to the fake provider's own batch API
 * (OpenAI Files + Batch, Anthropic Message Batches) in one upstream batch, are charged once at the batch price, fall
 * back to a direct call (charged the regular price) when the provider fails them retryably, and fail uncharged when
 * it refuses them. Money is checked against the ledger, the history and the balance.
 */
import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import request from 'supertest';
import { DelayedError, type Job } from 'bullmq';
import { money, ZERO, type Decimal } from '../../shared/money';
import { moneyJson } from '../../shared/formats/format-utils';
import { tokenCost } from '../../shared/billing/pricing';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import { QUEUES, QUEUE_NAMES } from '../../shared/queue/queue-names';
import { UpstreamBatches } from '../../shared/services/upstream-batches.service';
import { UpstreamBatchRunner } from '../../workers/services/upstream-batch-runner';
import { stuckGenerationReaper } from '../../workers/processors/reap-stuck-generations.processor';
import { batchEnded, batchUntil, jsonl, type BatchLine } from '../helpers/openai-batches';
import { createTestStack, FAKE_PROVIDER_KEY, STACK_MODELS, stackCatalog, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

const ENV = { BATCH_POLL_MS: '50', BATCH_UPSTREAM_POLL_MS: '100', BATCH_UPSTREAM_GATHER_MS: '300' };
/** A reasoning model whose endpoint speaks the Responses API (as the shipped catalog's OpenAI endpoints), with batch prices. */
const REASONER = 'openai/o4-mini';

/** The stack's chat (OpenAI and Anthropic) and embedding models, each endpoint with batch prices at half the regular ones. */
const withBatchPrices = (fakeUrl: string) => {
  const models = stackCatalog(fakeUrl).models;
  const half = (p: Record<string, number | string>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, String(Number(v) / 2)]));
  const ids = [STACK_MODELS.chat, STACK_MODELS.chatAnthropic, STACK_MODELS.embedding];
  const reasoner = {
    displayName: 'o4-mini',
    type: 'chat',
    endpoints: [
      {
        provider: 'openai',
        upstreamModel: 'o4-mini',
        responsesApi: true,
        price: { prompt: 110, completion: 440 },
        batch: { price: { prompt: 55, completion: 220 } },
        tiers: { priority: { price: { prompt: 200, completion: 800 } }, flex: { price: { prompt: 55, completion: 220 } } },
        supports: ['tools', 'tool_choice', 'reasoning', 'response_format', 'max_tokens'],
        maxOutputTokens: 100000,
      },
    ],
  };
  return { models: { ...Object.fromEntries(ids.map((id) => [id, { ...models[id], endpoints: models[id].endpoints.map((e) => ({ ...e, batch: { price: half(e.price) } })) }])), [REASONER]: reasoner } };
};

type Line = BatchLine;
interface OutLine {
  custom_id: string;
  response: { status_code: number; request_id: string | null; body: Record<string, unknown> & { error?: { code: string }; usage?: { cost_rub: number } } };
}

const chatLine = (model: string, i: number, text = `batch line ${i}`): Line => ({
  custom_id: `req-${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model, messages: [{ role: 'user', content: text }], max_tokens: 32 },
});
const ended = batchEnded;

const until = batchUntil;

async function run(c: OpenAI, lines: Line[], endpoint: '/v1/chat/completions' | '/v1/embeddings' | '/v1/responses' = '/v1/chat/completions'): Promise<Batch> {
  const file = await c.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'input.jsonl'), purpose: 'batch' });
  return c.batches.create({ input_file_id: file.id, endpoint, completion_window: '24h' });
}

async function outLines(c: OpenAI, fileId: string | null | undefined): Promise<OutLine[]> {
  if (!fileId) return [];
  return (await (await c.files.content(fileId)).text()).split('\n').filter(Boolean).map((l) => JSON.parse(l) as OutLine);
}

/** What the ledger charged each generation of a batch (charge entries), by generation id. */
async function charges(s: TestStack, org: StackOrg, batchId: string): Promise<Map<string, Decimal>> {
  await s.settled(org.organizationId);
  const gens = await s.t.db.generation.findMany({ where: { id: { contains: `_${batchId.slice('batch_'.length)}l` } }, select: { id: true } });
  const entries = await s.t.db.ledgerEntry.findMany({ where: { generationId: { in: gens.map((g) => g.id) }, kind: 'charge' } });
  const byId = new Map<string, Decimal>();
  for (const e of entries) byId.set(e.generationId!, (byId.get(e.generationId!) ?? ZERO).plus(money(e.amount).abs()));
  return byId;
}

async function balanceOf(s: TestStack, organizationId: string): Promise<Decimal> {
  await s.settled(organizationId);
  return money((await s.t.db.organization.findUniqueOrThrow({ where: { id: organizationId } })).balance);
}

const sum = (xs: Iterable<Decimal>) => [...xs].reduce((a, b) => a.plus(b), ZERO);
const directCalls = (s: TestStack, path: string) => s.fake.requests.filter((r) => r.method === 'POST' && r.path === path).length;

/**
 * Every output line charged exactly `price` on the usage its history record shows, and that charge is its
 * `usage.cost_rub` (chat) and its history cost.
 */
async function expectCharged(s: TestStack, org: StackOrg, out: OutLine[], byId: Map<string, Decimal>, slug: string, which: 'batch' | 'regular', provider: string) {
  const resolved = endpointBySlug(s.catalog, slug)!;
  const price = which === 'batch' ? resolved.endpoint.batch!.price : resolved.endpoint.price;
  for (const l of out) {
    const id = l.response.request_id!;
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id } });
    const usage = g.usage as { inputTokens: number; outputTokens: number };
    const expected = tokenCost(price, { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens ?? 0 });
    expect(expected.greaterThan(0)).toBe(true);
    expect(byId.get(id)?.toFixed(10)).toBe(expected.toFixed(10));
    if (l.response.body.usage && 'cost_rub' in l.response.body.usage) expect(l.response.body.usage.cost_rub).toBe(moneyJson(expected.toFixed(10)));
    const h = await request(s.app).get(`/v1/history/generations/${id}`).set(org.auth);
    expect(h.body).toMatchObject({ responseMode: 'batch', status: 'completed', finalEndpointSlug: slug });
    expect(g.provider).toBe(provider);
    expect(money(h.body.clientCost).toFixed(6)).toBe(expected.toFixed(6));
  }
}

describe('batch lines at providers\' own batch APIs (openai SDK)', () => {
  let s: TestStack;
  let org: StackOrg;
  let client: OpenAI;

  beforeAll(async () => {
    s = await createTestStack({ env: ENV, catalogOverrides: withBatchPrices });
    org = await s.seed({ balance: '1000' });
    client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => s.close());
  beforeEach(() => s.fake.reset());

  it.each([
    ['OpenAI', STACK_MODELS.chat, 'openai', '/openai/v1/chat/completions', 1],
    ['Anthropic', STACK_MODELS.chatAnthropic, 'anthropic', '/anthropic/v1/messages', 0],
  ])('sends a chat batch on %s to its batch API: one upstream batch, no direct call, each line charged the batch price once', async (_name, model, provider, direct, uploads) => {
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 6 }, (_, i) => chatLine(model, i)));
    const b = await until(client, created.id, ended);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toEqual({ total: 6, completed: 6, failed: 0 });
    expect(s.fake.batchStats).toMatchObject({ created: 1, linesRun: 6, uploads });
    expect(directCalls(s, direct)).toBe(0);

    const out = await outLines(client, b.output_file_id);
    expect(out.map((l) => l.custom_id).sort()).toEqual(['req-0', 'req-1', 'req-2', 'req-3', 'req-4', 'req-5']);
    for (const l of out) {
      expect(l.response.status_code).toBe(200);
      expect(l.response.body).toMatchObject({ object: 'chat.completion', id: l.response.request_id, model });
      const content = (l.response.body as { choices: Array<{ message: { content: string } }> }).choices[0].message.content;
      expect(content).toContain(`batch line ${l.custom_id.slice('req-'.length)}`);
    }
    const byId = await charges(s, org, b.id);
    expect(byId.size).toBe(6);
    await expectCharged(s, org, out, byId, `${model}:${provider}`, 'batch', provider);
    // Half the regular price, exactly: what the same usage costs at the regular price, halved.
    const regular = endpointBySlug(s.catalog, `${model}:${provider}`)!.endpoint.price;
    for (const l of out) {
      const usage = (await s.t.db.generation.findFirstOrThrow({ where: { id: l.response.request_id! } })).usage as { inputTokens: number; outputTokens: number };
      expect(byId.get(l.response.request_id!)!.times(2).toFixed(10)).toBe(tokenCost(regular, usage).toFixed(10));
    }
    const charged = sum(byId.values());
    expect(money((await s.t.db.batch.findUniqueOrThrow({ where: { id: b.id } })).cost).toFixed(10)).toBe(charged.toFixed(10));
    expect((b.usage as unknown as { cost_rub: number }).cost_rub).toBe(moneyJson(charged.toFixed(10)));
    expect(before.minus(await balanceOf(s, org.organizationId)).toFixed(10)).toBe(charged.toFixed(10));
    expect(await s.t.db.upstreamBatch.findMany({ where: { batchId: b.id } })).toEqual([expect.objectContaining({ status: 'done', lines: 6, upstreamId: expect.any(String) })]);
  });

  it('sends Anthropic Message Batches lines with reasoning only as Anthropic takes them: what thinking forbids left out, each line answered with a warning', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    const lines: Line[] = [
      { custom_id: 'req-0', method: 'POST', url: '/v1/chat/completions', body: { model: STACK_MODELS.chatAnthropic, messages: [{ role: 'user', content: 'a' }], max_tokens: 4000, reasoning_effort: 'medium', temperature: 0.2, top_p: 0.5 } },
      { custom_id: 'req-1', method: 'POST', url: '/v1/chat/completions', body: { model: STACK_MODELS.chatAnthropic, messages: [{ role: 'user', content: 'b' }], max_tokens: 4000, reasoning_effort: 'high', tools, tool_choice: 'required' } },
    ];
    const b = await until(client, (await run(client, lines)).id, ended);
    expect(b.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    const params = [...s.fake.anthropicBatches.values()].flatMap((x) => x.lines.map((l) => l.params as Record<string, unknown>));
    const thinking = params.filter((p) => p.thinking !== undefined);
    expect(params).toHaveLength(2);
    expect(thinking).toEqual([expect.objectContaining({ thinking: { type: 'enabled', budget_tokens: 3999 } })]); // the forced tool choice's line thinks not
    expect(thinking[0]).not.toHaveProperty('temperature');
    expect(thinking[0]).not.toHaveProperty('top_p');
    const warnings = (await outLines(client, b.output_file_id)).map((l) => JSON.stringify((l.response.body as { switchyard?: unknown }).switchyard ?? {}));
    expect(warnings.join(' ')).toMatch(/temperature 0.2 was left out/);
    expect(warnings.join(' ')).toMatch(/reasoning was left out .*forced tool choice/);
  });

  it('sends /v1/responses lines to an endpoint that speaks the Responses API as /v1/responses lines, its chat completion lines as chat completions: one provider batch per API', async () => {
    const responsesLine = (i: number): Line => ({ custom_id: `r-${i}`, method: 'POST', url: '/v1/responses', body: { model: REASONER, input: `responses line ${i}`, reasoning: { effort: 'low', summary: 'auto' }, max_output_tokens: 64 } });
    const [rb, cb] = await Promise.all([run(client, [0, 1, 2].map(responsesLine), '/v1/responses'), run(client, [0, 1].map((i) => chatLine(REASONER, i)))]);
    const [r, c] = await Promise.all([until(client, rb.id, ended), until(client, cb.id, ended)]);
    expect(r.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    expect(c.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    expect(directCalls(s, '/openai/v1/responses') + directCalls(s, '/openai/v1/chat/completions')).toBe(0);
    const upstream = [...s.fake.openaiBatches.values()];
    expect(upstream.map((b) => b.endpoint).sort()).toEqual(['/v1/chat/completions', '/v1/responses']);
    const sent = upstream.find((b) => b.endpoint === '/v1/responses')!.lines.map((l) => l.body);
    expect(sent).toHaveLength(3);
    for (const body of sent) expect(body).toMatchObject({ model: 'o4-mini', store: false, reasoning: { effort: 'low', summary: 'auto' }, max_output_tokens: 64 });

    const out = await outLines(client, r.output_file_id);
    for (const l of out) {
      const body = l.response.body as { object: string; output: Array<{ type: string; summary?: Array<{ text: string }> }>; output_text: string };
      expect(body).toMatchObject({ object: 'response', id: l.response.request_id, output_text: `Echo: responses line ${l.custom_id.slice(2)}` });
      expect(body.output.find((o) => o.type === 'reasoning')?.summary?.[0]?.text).toBe(`Thinking about: responses line ${l.custom_id.slice(2)}`);
    }
    await expectCharged(s, org, out, await charges(s, org, r.id), `${REASONER}:openai`, 'batch', 'openai');
    await expectCharged(s, org, await outLines(client, c.output_file_id), await charges(s, org, c.id), `${REASONER}:openai`, 'batch', 'openai');
  });

  it('leaves a line\'s service_tier out of the provider batch, with a warning: the batch API processes it at the batch price', async () => {
    const lines: Line[] = ['priority', 'flex', 'default'].map((tier, i) => ({ custom_id: `t-${i}`, method: 'POST', url: '/v1/responses', body: { model: REASONER, input: `tier line ${i}`, service_tier: tier, max_output_tokens: 64 } }));
    const b = await until(client, (await run(client, lines, '/v1/responses')).id, ended);
    expect(b.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    expect(directCalls(s, '/openai/v1/responses')).toBe(0);
    const sent = [...s.fake.openaiBatches.values()].flatMap((x) => x.lines.map((l) => l.body as Record<string, unknown>));
    expect(sent).toHaveLength(3);
    for (const body of sent) expect(body).not.toHaveProperty('service_tier');
    const out = await outLines(client, b.output_file_id);
    const warnings = Object.fromEntries(out.map((l) => [l.custom_id, ((l.response.body as { switchyard?: { warnings?: string[] } }).switchyard?.warnings ?? []).join(' | ')]));
    expect(warnings['t-0']).toMatch(/service_tier "priority" was left out of the call to o4-mini: a line of openai's batch API is processed and charged at the batch price/);
    expect(warnings['t-1']).toMatch(/service_tier "flex" was left out/);
    expect(warnings['t-2']).toBe('');
    await expectCharged(s, org, out, await charges(s, org, b.id), `${REASONER}:openai`, 'batch', 'openai');
  });

  it('sends an embeddings batch to OpenAI\'s batch API, charged the batch price', async () => {
    const lines = ['a', 'b', 'c'].map((t, i): Line => ({ custom_id: `e-${i}`, method: 'POST', url: '/v1/embeddings', body: { model: STACK_MODELS.embedding, input: [t, `${t}${t}`] } }));
    const b = await until(client, (await run(client, lines, '/v1/embeddings')).id, ended);
    expect(b.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    expect(s.fake.batchStats).toMatchObject({ created: 1, linesRun: 3 });
    expect(directCalls(s, '/openai/v1/embeddings')).toBe(0);
    const out = await outLines(client, b.output_file_id);
    for (const l of out) expect((l.response.body as { data: unknown[] }).data).toHaveLength(2);
    await expectCharged(s, org, out, await charges(s, org, b.id), `${STACK_MODELS.embedding}:openai`, 'batch', 'openai');
  });

  it('falls back to a direct call for a line failed retryably (charged the regular price once) and fails a refused line uncharged', async () => {
    s.fake.setKnobs({ batchLineErrors: { '[fail-500]': 500, '[fail-400]': 400 } });
    const before = await balanceOf(s, org.organizationId);
    const input = [chatLine(STACK_MODELS.chat, 0), chatLine(STACK_MODELS.chat, 1, 'retry me [fail-500]'), chatLine(STACK_MODELS.chat, 2, 'refuse me [fail-400]')];
    const b = await until(client, (await run(client, input)).id, ended);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    expect(s.fake.batchStats.created).toBe(1);
    // Only the line failed retryably was called directly, once.
    expect(directCalls(s, '/openai/v1/chat/completions')).toBe(1);

    const out = await outLines(client, b.output_file_id);
    const errors = await outLines(client, b.error_file_id);
    expect(out.map((l) => l.custom_id).sort()).toEqual(['req-0', 'req-1']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ custom_id: 'req-2', response: { status_code: 400 } });
    const byId = await charges(s, org, b.id);
    expect(byId.has(errors[0].response.request_id!)).toBe(false);
    const slug = `${STACK_MODELS.chat}:openai`;
    await expectCharged(s, org, out.filter((l) => l.custom_id === 'req-0'), byId, slug, 'batch', 'openai');
    await expectCharged(s, org, out.filter((l) => l.custom_id === 'req-1'), byId, slug, 'regular', 'openai');
    expect(byId.size).toBe(2);
    expect(before.minus(await balanceOf(s, org.organizationId)).toFixed(10)).toBe(sum(byId.values()).toFixed(10));
  });

  it('cancels mid-upstream-batch: cancelled upstream, lines the provider finished charged and answered, the rest released', async () => {
    s.fake.setKnobs({ batchMs: 4000 });
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 20 }, (_, i) => chatLine(STACK_MODELS.chat, i)));
    await waitUntil(async () => (s.fake.batchStats.linesRun >= 3 ? true : undefined), 20_000);
    await client.batches.cancel(created.id);
    const b = await until(client, created.id, ended);
    expect(b.status).toBe('cancelled');
    expect(s.fake.batchStats).toMatchObject({ created: 1, cancels: 1 });
    expect(directCalls(s, '/openai/v1/chat/completions')).toBe(0);
    const out = await outLines(client, b.output_file_id);
    expect(out.length).toBe(b.request_counts!.completed);
    expect(out.length).toBeGreaterThan(0);
    expect(out.length).toBeLessThan(20);
    expect(out.length).toBeLessThanOrEqual(s.fake.batchStats.linesRun);
    // Charged: exactly the lines answered; the others ended cancelled, released.
    const byId = await charges(s, org, b.id);
    expect([...byId.keys()].sort()).toEqual(out.map((l) => l.response.request_id!).sort());
    const gens = await s.t.db.generation.findMany({ where: { id: { contains: `_${b.id.slice('batch_'.length)}l` } } });
    expect(gens.every((g) => g.status === 'completed' || (g.status === 'cancelled' && money(g.clientCost).isZero()))).toBe(true);
    expect(before.minus(await balanceOf(s, org.organizationId)).toFixed(10)).toBe(sum(byId.values()).toFixed(10));
  });

  it('expires mid-upstream-batch: cancelled upstream, what the provider finished charged, every other line batch_expired and uncharged', async () => {
    s.fake.setKnobs({ batchMs: 4000 });
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 20 }, (_, i) => chatLine(STACK_MODELS.chat, i)));
    await waitUntil(async () => (s.fake.batchStats.linesRun >= 3 ? true : undefined), 20_000);
    await s.t.db.batch.update({ where: { id: created.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const b = await until(client, created.id, ended);
    expect(b.status).toBe('expired');
    expect(s.fake.batchStats).toMatchObject({ created: 1, cancels: 1 });
    const out = await outLines(client, b.output_file_id);
    const errors = await outLines(client, b.error_file_id);
    expect(out.length).toBeGreaterThan(0);
    expect(out.length + errors.length).toBe(20);
    expect(errors.every((e) => e.response.status_code === 408 && e.response.body.error?.code === 'batch_expired')).toBe(true);
    const byId = await charges(s, org, b.id);
    expect([...byId.keys()].sort()).toEqual(out.map((l) => l.response.request_id!).sort());
    expect(before.minus(await balanceOf(s, org.organizationId)).toFixed(10)).toBe(sum(byId.values()).toFixed(10));
  });

  it('never overspends: lines the balance cannot cover answer 402, the others go upstream', async () => {
    const poor = await s.seed({ balance: '0.01' });
    const c = new OpenAI({ apiKey: poor.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
    const lines = Array.from({ length: 40 }, (_, i) => ({ ...chatLine(STACK_MODELS.chat, i), body: { ...chatLine(STACK_MODELS.chat, i).body, max_tokens: 1000 } }));
    const b = await until(c, (await run(c, lines)).id, ended, 80_000);
    expect(b.status).toBe('completed');
    expect(b.request_counts!.completed).toBeGreaterThan(0);
    expect(b.request_counts!.failed).toBeGreaterThan(0);
    expect(b.request_counts!.completed + b.request_counts!.failed).toBe(40);
    const errors = await outLines(c, b.error_file_id);
    expect(errors.every((e) => e.response.status_code === 402)).toBe(true);
    expect(s.fake.batchStats.linesRun).toBe(b.request_counts!.completed);
    expect(directCalls(s, '/openai/v1/chat/completions')).toBe(0);
    const after = await balanceOf(s, poor.organizationId);
    expect(after.greaterThanOrEqualTo(0)).toBe(true);
    expect(money('0.01').minus(after).toFixed(10)).toBe(sum((await charges(s, poor, b.id)).values()).toFixed(10));
  }, 90_000); // a whole batch's round at the provider: 30 s was not enough beside busy processes
});

describe('a chunk job run again (a worker crash after the upstream create)', () => {
  /** How long the fake's batches run: the steps before the last must find them still running, however busy the machine. */
  const RUNNING_MS = 3000;
  let s: TestStack;
  let org: StackOrg;
  let client: OpenAI;

  beforeAll(async () => {
    // No worker serves the chunks' queue: the test runs their jobs itself.
    s = await createTestStack({ env: ENV, catalogOverrides: withBatchPrices, queues: QUEUE_NAMES.filter((q) => q !== QUEUES.upstreamBatches) });
    org = await s.seed({ balance: '1000' });
    client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => s.close());

  it('creates no second upstream batch and charges nothing twice', async () => {
    s.fake.setKnobs({ batchMs: 1500 });
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 5 }, (_, i) => chatLine(STACK_MODELS.chat, i)));
    const chunk = await waitUntil(async () => (await s.t.db.upstreamBatch.findFirst({ where: { batchId: created.id } })) ?? undefined, 20_000);
    // The reaper leaves parked lines alone, however old: no job is theirs while their chunk waits.
    expect(await stuckGenerationReaper(s.workerDeps, { everyMs: 60_000, minAgeMs: 0 })()).toMatchObject({ reaped: 0 });
    const runner = new UpstreamBatchRunner(s.workerDeps, new UpstreamBatches(s.t.db), { text: s.ctx.queues.text, embeddings: s.ctx.queues.embeddings, batches: s.ctx.queues.batches });
    const job = { data: { upstreamBatchId: chunk.id, batchId: created.id, organizationId: org.organizationId }, moveToDelayed: async () => undefined, updateData: async () => undefined } as unknown as Job;
    const step = () => runner.run(job).then(() => 'ended', (e: unknown) => (e instanceof DelayedError ? 'delayed' : Promise.reject(e)));

    expect(await step()).toBe('delayed'); // created upstream, then waits for it
    expect(await step()).toBe('delayed'); // the re-run polls the same batch
    expect(s.fake.batchStats.created).toBe(1);
    // The fake's batch ends (1.5 s): results read, lines settled.
    await waitUntil(async () => ((await step()) === 'ended' ? true : undefined), 10_000, 200);
    await s.t.db.upstreamBatch.update({ where: { id: chunk.id }, data: { status: 'running' } });
    expect(await step()).toBe('ended'); // read and settled again: nothing more charged
    expect(s.fake.batchStats.created).toBe(1);

    const b = await until(client, created.id, ended);
    expect(b.request_counts).toEqual({ total: 5, completed: 5, failed: 0 });
    const byId = await charges(s, org, b.id);
    expect(byId.size).toBe(5);
    const entries = await s.t.db.ledgerEntry.count({ where: { generationId: { in: [...byId.keys()] }, kind: 'charge' } });
    expect(entries).toBe(5);
    expect(before.minus(await balanceOf(s, org.organizationId)).toFixed(10)).toBe(sum(byId.values()).toFixed(10));
  });

  it('a run that died after the provider accepted the create, before recording it: the re-run finds that batch by its tag, creates none', async () => {
    s.fake.reset();
    s.fake.setKnobs({ batchMs: RUNNING_MS });
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 4 }, (_, i) => chatLine(STACK_MODELS.chat, i)));
    const chunk = await waitUntil(async () => (await s.t.db.upstreamBatch.findFirst({ where: { batchId: created.id } })) ?? undefined, 20_000);
    const runner = new UpstreamBatchRunner(s.workerDeps, new UpstreamBatches(s.t.db), { text: s.ctx.queues.text, embeddings: s.ctx.queues.embeddings, batches: s.ctx.queues.batches });
    const job = { data: { upstreamBatchId: chunk.id, batchId: created.id, organizationId: org.organizationId }, moveToDelayed: async () => undefined, updateData: async () => undefined } as unknown as Job;
    const step = () => runner.run(job).then(() => 'ended', (e: unknown) => (e instanceof DelayedError ? 'delayed' : Promise.reject(e)));

    expect(await step()).toBe('delayed');
    const first = await s.t.db.upstreamBatch.findUniqueOrThrow({ where: { id: chunk.id } });
    expect(s.fake.batchStats).toMatchObject({ created: 1, uploads: 1 });
    // As the row is when a worker dies between the provider's reply to the create and the commit of its id.
    await s.t.db.upstreamBatch.update({ where: { id: chunk.id }, data: { status: 'submitting', upstreamId: null } });
    expect(await step()).toBe('delayed');
    expect(s.fake.batchStats).toMatchObject({ created: 1, uploads: 1 });
    expect(await s.t.db.upstreamBatch.findUniqueOrThrow({ where: { id: chunk.id } })).toMatchObject({ status: 'running', upstreamId: first.upstreamId });

    await waitUntil(async () => ((await step()) === 'ended' ? true : undefined), 10_000, 200);
    const b = await until(client, created.id, ended);
    expect(b.request_counts).toEqual({ total: 4, completed: 4, failed: 0 });
    expect(s.fake.batchStats).toMatchObject({ created: 1, linesRun: 4 });
    const byId = await charges(s, org, b.id);
    expect(byId.size).toBe(4);
    expect(before.minus(await balanceOf(s, org.organizationId)).toFixed(10)).toBe(sum(byId.values()).toFixed(10));
  });

  /** The chunk of a batch just created, and one step of its job run here: `ended`, or `delayed` (it waits upstream). */
  async function chunkJob(batchId: string) {
    const chunk = await waitUntil(async () => (await s.t.db.upstreamBatch.findFirst({ where: { batchId } })) ?? undefined, 20_000);
    const runner = new UpstreamBatchRunner(s.workerDeps, new UpstreamBatches(s.t.db), { text: s.ctx.queues.text, embeddings: s.ctx.queues.embeddings, batches: s.ctx.queues.batches });
    const job = { data: { upstreamBatchId: chunk.id, batchId, organizationId: org.organizationId }, moveToDelayed: async () => undefined, updateData: async () => undefined } as unknown as Job;
    const step = () => runner.run(job).then(() => 'ended', (e: unknown) => (e instanceof DelayedError ? 'delayed' : Promise.reject(e)));
    return { chunk, step, row: () => s.t.db.upstreamBatch.findUniqueOrThrow({ where: { id: chunk.id } }) };
  }

  /** A Message Batch someone else made with the same Anthropic key: `n` requests, none of them ours. */
  async function othersBatch(n: number): Promise<{ id: string }> {
    const requests = Array.from({ length: n }, (_, i) => ({ custom_id: `not_ours_${i}`, params: { model: 'claude-sonnet-4', max_tokens: 16, messages: [{ role: 'user', content: `someone else ${i}` }] } }));
    const res = await fetch(`${s.fake.url}/anthropic/v1/messages/batches`, { method: 'POST', headers: { 'x-api-key': FAKE_PROVIDER_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify({ requests }) });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string };
  }

  /** Every line of the batch answered once and charged once, at `which` price, and the balance down by exactly that. */
  async function answeredOnce(b: Batch, lines: number, before: Decimal, which: 'batch' | 'regular') {
    expect(b.request_counts).toEqual({ total: lines, completed: lines, failed: 0 });
    const out = await outLines(client, b.output_file_id);
    expect(out).toHaveLength(lines);
    const byId = await charges(s, org, b.id);
    expect(byId.size).toBe(lines);
    expect(await s.t.db.ledgerEntry.count({ where: { generationId: { in: [...byId.keys()] }, kind: 'charge' } })).toBe(lines);
    await expectCharged(s, org, out, byId, `${STACK_MODELS.chatAnthropic}:anthropic`, which, 'anthropic');
    expect(before.minus(await balanceOf(s, org.organizationId)).toFixed(10)).toBe(sum(byId.values()).toFixed(10));
  }

  it('on Anthropic (no tag kept), a run that died after the provider accepted the create, before recording it: the re-run finds that batch by its shape, creates none', async () => {
    s.fake.reset();
    s.fake.setKnobs({ batchMs: RUNNING_MS });
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 4 }, (_, i) => chatLine(STACK_MODELS.chatAnthropic, i)));
    const { step, row } = await chunkJob(created.id);

    expect(await step()).toBe('delayed');
    const first = await row();
    expect(s.fake.batchStats.created).toBe(1);
    // As the row is when a worker dies between the provider's reply to the create and the commit of its id.
    await s.t.db.upstreamBatch.update({ where: { id: first.id }, data: { status: 'submitting', upstreamId: null } });
    expect(await step()).toBe('delayed');
    expect(s.fake.batchStats.created).toBe(1);
    expect(await row()).toMatchObject({ status: 'running', upstreamId: first.upstreamId });

    await waitUntil(async () => ((await step()) === 'ended' ? true : undefined), 10_000, 200);
    expect(s.fake.batchStats).toMatchObject({ created: 1, linesRun: 4 });
    expect(directCalls(s, '/anthropic/v1/messages')).toBe(0);
    await answeredOnce(await until(client, created.id, ended), 4, before, 'batch');
  });

  it('on Anthropic, two batches of the chunk\'s size in the window cannot be told apart: the re-run creates anew; each line answered and charged the batch price once', async () => {
    s.fake.reset();
    s.fake.setKnobs({ batchMs: RUNNING_MS });
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 3 }, (_, i) => chatLine(STACK_MODELS.chatAnthropic, i)));
    const { step, row } = await chunkJob(created.id);

    expect(await step()).toBe('delayed');
    const first = await row();
    const other = await othersBatch(3);
    await s.t.db.upstreamBatch.update({ where: { id: first.id }, data: { status: 'submitting', upstreamId: null } });
    expect(await step()).toBe('delayed');
    // Ours, the other one, and the new one.
    expect(s.fake.batchStats.created).toBe(3);
    const again = await row();
    expect(again.status).toBe('running');
    expect([first.upstreamId, other.id]).not.toContain(again.upstreamId);

    await waitUntil(async () => ((await step()) === 'ended' ? true : undefined), 10_000, 200);
    expect(directCalls(s, '/anthropic/v1/messages')).toBe(0);
    await answeredOnce(await until(client, created.id, ended), 3, before, 'batch');
  });

  it('on Anthropic, a batch taken by its shape that was another\'s (its results name none of the chunk\'s lines): none applied, the lines run as ordinary jobs, charged the regular price once', async () => {
    s.fake.reset();
    s.fake.setKnobs({ batchMs: RUNNING_MS });
    const before = await balanceOf(s, org.organizationId);
    const created = await run(client, Array.from({ length: 2 }, (_, i) => chatLine(STACK_MODELS.chatAnthropic, i)));
    const { chunk, step, row } = await chunkJob(created.id);
    // As the row is when a worker dies after committing `submitting`, before its create reached the provider.
    await s.t.db.upstreamBatch.update({ where: { id: chunk.id }, data: { status: 'submitting', submittedAt: new Date() } });
    const other = await othersBatch(2);

    expect(await step()).toBe('delayed');
    expect(await row()).toMatchObject({ status: 'running', upstreamId: other.id });
    expect(s.fake.batchStats.created).toBe(1);
    await waitUntil(async () => ((await step()) === 'ended' ? true : undefined), 10_000, 200);
    const b = await until(client, created.id, ended);
    expect(directCalls(s, '/anthropic/v1/messages')).toBe(2);
    await answeredOnce(b, 2, before, 'regular');
  });
});
