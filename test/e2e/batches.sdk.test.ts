/**
 * The Batch API with the official openai Node SDK (decisions.md section 7; docs/batches.md): files.create with
 * purpose batch, batches.create, retrieve (polled), list, cancel and files.content, against the in-process stack
 * with the fake providers. The money is checked against the ledger and the balance, the lines against the history.
 */
import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import request from 'supertest';
import { money, ZERO, type Decimal } from '../../shared/money';
import { moneyJson } from '../../shared/formats/format-utils';
import { batchEnded, batchUntil, jsonl, type BatchLine } from '../helpers/openai-batches';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil as waitFor } from '../helpers/until';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;

beforeAll(async () => {
  s = await createTestStack({ env: { BATCH_POLL_MS: '50' } });
  org = await s.seed({ balance: '1000' });
  client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

type Line = BatchLine;
interface OutLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string | null; body: Record<string, unknown> & { error?: { code: string } } };
  error: { code: string; message: string } | null;
}

const chatLine = (i: number, extra: Record<string, unknown> = {}): Line => ({
  custom_id: `req-${i}`,
  method: 'POST',
  url: '/v1/chat/completions',
  body: { model: STACK_MODELS.chat, messages: [{ role: 'user', content: `batch line ${i}` }], max_tokens: 32, ...extra },
});

async function upload(c: OpenAI, lines: Line[]) {
  return c.files.create({ file: await toFile(Buffer.from(jsonl(lines)), 'input.jsonl'), purpose: 'batch' });
}

const until = batchUntil;
const ended = batchEnded;

async function lines(c: OpenAI, fileId: string | null | undefined): Promise<OutLine[]> {
  if (!fileId) return [];
  const text = await (await c.files.content(fileId)).text();
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as OutLine);
}

/** The generations of a batch's lines and what the ledger charged them. */
async function ledgerOf(batchId: string): Promise<{ ids: string[]; charged: Decimal; byId: Map<string, Decimal> }> {
  await s.settled(org.organizationId);
  const suffix = batchId.slice('batch_'.length);
  const gens = await s.t.db.generation.findMany({ where: { id: { contains: `_${suffix}l` } }, select: { id: true, responseMode: true } });
  expect(gens.every((g) => g.responseMode === 'batch')).toBe(true);
  const entries = await s.t.db.ledgerEntry.findMany({ where: { generationId: { in: gens.map((g) => g.id) }, kind: 'charge' } });
  const byId = new Map<string, Decimal>();
  for (const e of entries) byId.set(e.generationId!, (byId.get(e.generationId!) ?? ZERO).plus(money(e.amount).abs()));
  return { ids: gens.map((g) => g.id), charged: [...byId.values()].reduce((a, b) => a.plus(b), ZERO), byId };
}

async function balanceOf(organizationId: string): Promise<Decimal> {
  await s.settled(organizationId);
  return money((await s.t.db.organization.findUniqueOrThrow({ where: { id: organizationId } })).balance);
}

describe('the Batch API with the openai SDK', () => {
  it('runs a chat batch: output and error lines, request_counts, cost = the ledger charges = the balance drop, history', async () => {
    const before = await balanceOf(org.organizationId);
    const input = [...Array.from({ length: 6 }, (_, i) => chatLine(i)), { ...chatLine(6), body: { ...chatLine(6).body, model: 'acme/no-such-model' } }];
    const file = await upload(client, input);
    expect(file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'input.jsonl', bytes: Buffer.byteLength(jsonl(input)) });
    expect(file.id).toMatch(/^file-/);
    expect(typeof file.created_at).toBe('number');
    expect(await client.files.retrieve(file.id)).toMatchObject({ id: file.id, bytes: file.bytes });

    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { job: 'nightly' } });
    expect(created).toMatchObject({ object: 'batch', status: 'validating', endpoint: '/v1/chat/completions', input_file_id: file.id, completion_window: '24h', metadata: { job: 'nightly' } });
    const b = await until(client, created.id, ended);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toEqual({ total: 7, completed: 6, failed: 1 });
    for (const k of ['created_at', 'in_progress_at', 'finalizing_at', 'completed_at', 'expires_at'] as const) expect(typeof b[k]).toBe('number');

    const out = await lines(client, b.output_file_id);
    expect(out.map((l) => l.custom_id).sort()).toEqual(['req-0', 'req-1', 'req-2', 'req-3', 'req-4', 'req-5']);
    for (const l of out) {
      expect(l.id).toMatch(/^batch_req_/);
      expect(l.error).toBeNull();
      expect(l.response.status_code).toBe(200);
      expect(l.response.body).toMatchObject({ object: 'chat.completion', id: l.response.request_id, model: STACK_MODELS.chat });
      const i = l.custom_id.slice('req-'.length);
      expect((l.response.body as { choices: Array<{ message: { content: string } }> }).choices[0].message.content).toContain(`batch line ${i}`);
    }
    const errors = await lines(client, b.error_file_id);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ custom_id: 'req-6', response: { status_code: 404, body: { error: { code: 'NOT_FOUND' } } }, error: null });

    // Money: what the batch says it cost is what the ledger charged its lines, and what the balance lost.
    const ledger = await ledgerOf(b.id);
    expect(ledger.ids).toHaveLength(6);
    expect(ledger.charged.greaterThan(0)).toBe(true);
    const row = await s.t.db.batch.findUniqueOrThrow({ where: { id: b.id } });
    expect(money(row.cost).toFixed(10)).toBe(ledger.charged.toFixed(10));
    expect((b.usage as unknown as { cost_rub: number }).cost_rub).toBe(moneyJson(ledger.charged.toFixed(10)));
    expect(before.minus(await balanceOf(org.organizationId)).toFixed(10)).toBe(ledger.charged.toFixed(10));
    for (const l of out) expect(ledger.byId.has(l.response.request_id!)).toBe(true);

    // History: each line is a generation of its own, responseMode batch.
    const h = await request(s.app).get(`/v1/history/generations/${out[0].response.request_id}`).set(org.auth);
    expect(h.status).toBe(200);
    expect(h.body).toMatchObject({ responseMode: 'batch', status: 'completed', apiType: 'chat_completions' });

    // Listing: the batch, the input and the two outputs; batch files are not media.
    const listed = await client.batches.list({ limit: 10 });
    expect(listed.data.map((x) => x.id)).toContain(b.id);
    const files = await client.files.list();
    expect(files.data.map((f) => f.id)).toEqual(expect.arrayContaining([file.id, b.output_file_id, b.error_file_id]));
    expect((await client.files.retrieve(b.output_file_id!)).purpose).toBe('batch_output');
    const media = await request(s.app).get('/v1/storage/files').set(org.auth);
    expect(media.body.data.map((f: { id: string }) => f.id)).not.toContain(file.id);
    expect(await client.files.delete(file.id)).toMatchObject({ id: file.id, deleted: true });
  });

  it('runs responses, embeddings and images lines, each answering what its synchronous call answers', async () => {
    const cases: Array<{ endpoint: '/v1/responses' | '/v1/embeddings' | '/v1/images/generations'; body: Record<string, unknown>; object: string }> = [
      { endpoint: '/v1/responses', body: { model: STACK_MODELS.chat, input: 'hello batch' }, object: 'response' },
      { endpoint: '/v1/embeddings', body: { model: STACK_MODELS.embedding, input: ['a', 'b'] }, object: 'list' },
      { endpoint: '/v1/images/generations', body: { model: STACK_MODELS.image, prompt: 'a lighthouse' }, object: '' },
    ];
    for (const c of cases) {
      const file = await upload(client, [{ custom_id: 'only', method: 'POST', url: c.endpoint, body: c.body }]);
      const b = await until(client, (await client.batches.create({ input_file_id: file.id, endpoint: c.endpoint, completion_window: '24h' })).id, ended);
      expect(b.request_counts).toEqual({ total: 1, completed: 1, failed: 0 });
      const [line] = await lines(client, b.output_file_id);
      if (c.object) expect(line.response.body.object).toBe(c.object);
      if (c.endpoint === '/v1/responses') expect(line.response.body).toMatchObject({ id: line.response.request_id, status: 'completed' });
      if (c.endpoint === '/v1/embeddings') expect((line.response.body as { data: unknown[] }).data).toHaveLength(2);
      if (c.endpoint === '/v1/images/generations') expect((line.response.body as { data: unknown[] }).data.length).toBeGreaterThan(0);
    }
  });

  it('fails a batch whose file has invalid lines before any line runs, naming each line', async () => {
    const input = [
      chatLine(1),
      chatLine(1), // duplicate custom_id
      { ...chatLine(3), url: '/v1/embeddings' },
      { ...chatLine(4), body: { ...chatLine(4).body, stream: true } },
      { ...chatLine(5), body: { messages: 'no model' } },
    ];
    const text = jsonl(input) + '{not json\n';
    const file = await client.files.create({ file: await toFile(Buffer.from(text), 'bad.jsonl'), purpose: 'batch' });
    const b = await until(client, (await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id, ended);
    expect(b.status).toBe('failed');
    expect(typeof b.failed_at).toBe('number');
    const errs = b.errors!.data!;
    expect(errs.map((e) => [e.line, e.code])).toEqual([
      [2, 'duplicate_custom_id'],
      [3, 'invalid_url'],
      [4, 'invalid_request'],
      [5, 'invalid_request'],
      [6, 'invalid_json_line'],
    ]);
    expect(b.output_file_id).toBeNull();
    expect(await ledgerOf(b.id)).toMatchObject({ ids: [] });
  });

  it('refuses an upload without purpose batch, and a batch on a file that is not one', async () => {
    await expect(client.files.create({ file: await toFile(Buffer.from(jsonl([chatLine(1)])), 'x.jsonl'), purpose: 'assistants' })).rejects.toMatchObject({ status: 400 });
    await expect(client.batches.create({ input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' })).rejects.toMatchObject({ status: 400 });
  });

  it('answers 402 for the lines the balance cannot cover, the others complete, and the balance never goes below zero', async () => {
    const poor = await s.seed({ balance: '0.01' });
    const c = new OpenAI({ apiKey: poor.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
    const file = await upload(c, Array.from({ length: 40 }, (_, i) => chatLine(i, { max_tokens: 1000 })));
    const b = await until(c, (await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id, ended);
    expect(b.status).toBe('completed');
    expect(b.request_counts!.total).toBe(40);
    expect(b.request_counts!.completed).toBeGreaterThan(0);
    expect(b.request_counts!.failed).toBeGreaterThan(0);
    expect(b.request_counts!.completed + b.request_counts!.failed).toBe(40);
    const errors = await lines(c, b.error_file_id);
    expect(errors).toHaveLength(b.request_counts!.failed);
    expect(errors.every((e) => e.response.status_code === 402 && e.response.body.error?.code === 'INSUFFICIENT_BALANCE')).toBe(true);
    expect((await lines(c, b.output_file_id)).length).toBe(b.request_counts!.completed);
    const after = await balanceOf(poor.organizationId);
    expect(after.greaterThanOrEqualTo(0)).toBe(true);
    expect(money('0.01').minus(after).toFixed(10)).toBe(money((await s.t.db.batch.findUniqueOrThrow({ where: { id: b.id } })).cost).toFixed(10));
  });

  it('cancels: lines not started never run nor are charged, running lines finish and are charged, counts add up', async () => {
    s.fake.setKnobs({ latencyMs: 400 });
    const file = await upload(client, Array.from({ length: 200 }, (_, i) => chatLine(i)));
    const before = await balanceOf(org.organizationId);
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    // Cancel while the first lines run (64 in flight at most).
    await until(client, created.id, (b) => b.status === 'in_progress' && (b.request_counts?.completed ?? 0) > 0, 30_000);
    const cancelling = await client.batches.cancel(created.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const b = await until(client, created.id, ended);
    expect(b.status).toBe('cancelled');
    expect(typeof b.cancelling_at).toBe('number');
    expect(typeof b.cancelled_at).toBe('number');
    const out = await lines(client, b.output_file_id);
    const errors = await lines(client, b.error_file_id);
    expect(out.length).toBe(b.request_counts!.completed);
    expect(errors.length).toBe(b.request_counts!.failed);
    expect(out.length + errors.length).toBeLessThan(200);
    // Every generation the batch made ran to its end and is in the files; no line outside them was charged.
    const ledger = await ledgerOf(b.id);
    expect(ledger.ids.sort()).toEqual(out.map((l) => l.response.request_id!).sort());
    expect(before.minus(await balanceOf(org.organizationId)).toFixed(10)).toBe(ledger.charged.toFixed(10));
    expect(s.fake.requests.filter((r) => r.method === 'POST').length).toBe(out.length);
    // A batch that has ended cannot be cancelled again.
    await expect(client.batches.cancel(created.id)).resolves.toMatchObject({ status: 'cancelled' });
  });

  it('cancels while the last lines run: those started finish and are charged, the rest never start, counts add up', async () => {
    s.fake.setKnobs({ latencyMs: 300 });
    // 70 lines with 64 in flight: the last 6 start as the first ones end, and the cancel lands among them.
    const file = await upload(client, Array.from({ length: 70 }, (_, i) => chatLine(i)));
    const before = await balanceOf(org.organizationId);
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await until(client, created.id, (b) => (b.request_counts?.completed ?? 0) >= 62, 30_000);
    await client.batches.cancel(created.id);
    const b = await until(client, created.id, ended);
    expect(b.status).toBe('cancelled');
    const out = await lines(client, b.output_file_id);
    expect(out.length).toBe(b.request_counts!.completed);
    expect(b.request_counts!.failed).toBe(0);
    expect(new Set(out.map((l) => l.custom_id)).size).toBe(out.length);
    const ledger = await ledgerOf(b.id);
    expect(ledger.ids.sort()).toEqual(out.map((l) => l.response.request_id!).sort());
    expect(money((await s.t.db.batch.findUniqueOrThrow({ where: { id: b.id } })).cost).toFixed(10)).toBe(ledger.charged.toFixed(10));
    expect(before.minus(await balanceOf(org.organizationId)).toFixed(10)).toBe(ledger.charged.toFixed(10));
  });

  it('expires: past the window nothing more starts and every line not done is answered batch_expired', async () => {
    s.fake.setKnobs({ latencyMs: 300 });
    const file = await upload(client, Array.from({ length: 150 }, (_, i) => chatLine(i)));
    const before = await balanceOf(org.organizationId);
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await until(client, created.id, (b) => (b.request_counts?.completed ?? 0) > 0, 30_000);
    // The 24 hours pass.
    await s.t.db.batch.update({ where: { id: created.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const b = await until(client, created.id, ended);
    expect(b.status).toBe('expired');
    expect(typeof b.expired_at).toBe('number');
    const out = await lines(client, b.output_file_id);
    const errors = await lines(client, b.error_file_id);
    expect(out.length + errors.length).toBe(150);
    expect(new Set([...out, ...errors].map((l) => l.custom_id)).size).toBe(150);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e.error?.code === 'batch_expired' && e.response.status_code === 408 && e.response.body.error?.code === 'batch_expired')).toBe(true);
    expect(b.request_counts).toEqual({ total: 150, completed: out.length, failed: errors.length });
    const ledger = await ledgerOf(b.id);
    expect([...ledger.byId.keys()].sort()).toEqual(out.map((l) => l.response.request_id!).sort());
    expect(before.minus(await balanceOf(org.organizationId)).toFixed(10)).toBe(ledger.charged.toFixed(10));
  });

  it('starts no more lines once its API key is revoked: each answers 401 api_key_revoked', async () => {
    s.fake.setKnobs({ latencyMs: 300 });
    const k = await s.seed({ balance: '100' });
    const c = new OpenAI({ apiKey: k.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
    const file = await upload(c, Array.from({ length: 150 }, (_, i) => chatLine(i)));
    const id = (await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).id;
    await waitFor(async () => ((await s.t.db.batch.findUniqueOrThrow({ where: { id } })).completed > 0 ? true : undefined));
    expect((await request(s.app).delete(`/v1/keys/${k.key.id}`).set({ Authorization: `Bearer ${k.ownerToken}` })).status).toBe(200);
    const read = () => s.t.db.batch.findUniqueOrThrow({ where: { id } });
    // The batch as it stands if it does not end, for the assertions to show.
    const row = await waitFor(async () => {
      const b = await read();
      return ['completed', 'failed', 'cancelled', 'expired'].includes(b.status) ? b : undefined;
    }, 30_000, 50).catch(read);
    expect(row.status).toBe('completed');
    expect(row.completed + row.failed).toBe(150);
    expect(row.failed).toBeGreaterThan(0);
    const refused = await s.t.db.generation.count({ where: { id: { contains: `_${id.slice('batch_'.length)}l` } } });
    expect(refused).toBe(row.completed);
  });
});
