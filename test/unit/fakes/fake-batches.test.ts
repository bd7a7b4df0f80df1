import OpenAI, { toFile } from 'openai';
import { startFakeProvider } from '../../../fakes/fake-provider';
import type { FakeProvider } from '../../../fakes/fake-provider';
import { waitUntil } from '../../helpers/until';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- loosely typed wire JSON keeps the assertions readable
type J = Record<string, any>;

let fake: FakeProvider;
let client: OpenAI;
beforeAll(async () => {
  fake = await startFakeProvider();
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${fake.url}/openai/v1`, maxRetries: 0 });
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const ANTHROPIC = { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };

async function call(path: string, body?: unknown, headers: Record<string, string> = ANTHROPIC): Promise<{ status: number; json: J; text: string }> {
  const res = await fetch(fake.url + path, { method: body === undefined ? 'GET' : 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json: J = {};
  try {
    json = JSON.parse(text) as J;
  } catch {
    // JSONL or text
  }
  return { status: res.status, json, text };
}
const jsonl = (text: string): J[] =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as J);

const chatLine = (id: string, text: string, url = '/v1/chat/completions'): J => ({ custom_id: id, method: 'POST', url, body: { model: 'gpt-4o', messages: [{ role: 'user', content: text }] } });

async function openaiBatch(lines: J[], endpoint: '/v1/chat/completions' | '/v1/embeddings' | '/v1/responses' = '/v1/chat/completions'): Promise<OpenAI.Batches.Batch> {
  const file = await client.files.create({ file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')), 'lines.jsonl'), purpose: 'batch' });
  expect(file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'lines.jsonl' });
  return client.batches.create({ input_file_id: file.id, endpoint, completion_window: '24h', metadata: { run: 't' } });
}

async function settle(id: string, seen: string[] = []): Promise<OpenAI.Batches.Batch> {
  return waitUntil(async () => {
    const batch = await client.batches.retrieve(id);
    if (seen.at(-1) !== batch.status) seen.push(batch.status);
    return ['completed', 'failed', 'cancelled', 'expired'].includes(batch.status) ? batch : undefined;
  }, 20_000, 10);
}
const content = async (id: string | null | undefined): Promise<J[]> => (id ? jsonl(await (await client.files.content(id)).text()) : []);

describe('fake OpenAI Batch API (through the official SDK)', () => {
  it('runs each line through the synchronous handler: validating → in_progress → finalizing → completed, a marked line in the error file', async () => {
    fake.setKnobs({ batchMs: 1500, batchLineErrors: { '[boom]': 500, '[bad]': 400 } });
    const created = await openaiBatch([chatLine('a', 'hello there'), chatLine('b', 'please [boom]'), chatLine('c', 'second'), chatLine('d', 'x [bad]')]);
    expect(created).toMatchObject({ object: 'batch', status: 'validating', endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { run: 't' } });
    expect(created.id).toMatch(/^batch_/);
    const seen: string[] = [created.status];
    const done = await settle(created.id, seen);
    // The phases in their order; a poll slower than a phase (finalizing is the last tenth, 150 ms) may miss it, and
    // its timestamp says it was passed through.
    const phases = ['validating', 'in_progress', 'finalizing', 'completed'];
    expect(seen).toEqual(phases.filter((p) => seen.includes(p)));
    expect([seen[0], seen.at(-1)]).toEqual(['validating', 'completed']);
    expect(done.request_counts).toEqual({ total: 4, completed: 2, failed: 2 });
    expect(done).toMatchObject({ in_progress_at: expect.any(Number), finalizing_at: expect.any(Number), completed_at: expect.any(Number), errors: null });
    expect(done.created_at <= done.in_progress_at! && done.in_progress_at! <= done.finalizing_at! && done.finalizing_at! <= done.completed_at!).toBe(true);

    const direct = await client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello there' }] });
    const output = await content(done.output_file_id);
    expect(output.map((l) => l.custom_id)).toEqual(['a', 'c']);
    expect(output[0]).toMatchObject({ id: expect.stringMatching(/^batch_req_/), error: null, response: { status_code: 200, request_id: expect.stringMatching(/^req_/) } });
    const body = output[0].response.body as J;
    expect(body.choices[0].message.content).toBe(direct.choices[0].message.content);
    expect(body.usage).toEqual(direct.usage);
    const errors = await content(done.error_file_id);
    expect(errors.map((l) => [l.custom_id, l.response.status_code, l.response.body.error.type])).toEqual([
      ['b', 500, 'server_error'],
      ['d', 400, 'invalid_request_error'],
    ]);
    expect(done.usage?.input_tokens).toBe(output.reduce((s, l) => s + (l.response.body.usage.prompt_tokens as number), 0));
    expect(fake.batchStats).toEqual({ created: 1, linesRun: 4, cancels: 0, uploads: 1 });
  });

  it('answers embeddings lines, and a line refused by the handler (400) goes to the error file', async () => {
    const emb = (id: string, input: unknown): J => ({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { model: 'text-embedding-3-small', input } });
    const done = await settle((await openaiBatch([emb('e1', 'alpha'), emb('e2', '')], '/v1/embeddings')).id);
    const [ok] = await content(done.output_file_id);
    expect(ok.response.body).toMatchObject({ object: 'list', data: [{ object: 'embedding', index: 0 }], usage: { prompt_tokens: 2 } });
    expect((await content(done.error_file_id)).map((l) => [l.custom_id, l.response.status_code])).toEqual([['e2', 400]]);
  });

  it('answers /v1/responses lines as the direct call does, and refuses in the error file what the direct call refuses', async () => {
    const line = (id: string, body: J): J => ({ custom_id: id, method: 'POST', url: '/v1/responses', body: { model: 'o4-mini', store: false, ...body } });
    const done = await settle((await openaiBatch([line('r1', { input: 'hello', reasoning: { effort: 'low', summary: 'auto' } }), line('r2', { input: 'x', max_tokens: 5 })], '/v1/responses')).id);
    expect(done).toMatchObject({ status: 'completed', endpoint: '/v1/responses', request_counts: { total: 2, completed: 1, failed: 1 } });
    const direct = await client.responses.create({ model: 'o4-mini', store: false, input: 'hello', reasoning: { effort: 'low', summary: 'auto' } });
    const [ok] = await content(done.output_file_id);
    expect(ok.response.body).toMatchObject({ object: 'response', status: 'completed', output: [{ type: 'reasoning', summary: direct.output[0]!.type === 'reasoning' ? direct.output[0].summary : [] }, { type: 'message' }], usage: direct.usage as J });
    expect((await content(done.error_file_id)).map((l) => [l.custom_id, l.response.status_code, l.response.body.error.param])).toEqual([['r2', 400, 'max_tokens']]);
    expect(done.usage).toMatchObject({ input_tokens: (direct.usage as J).input_tokens });
  });

  it('fails an invalid input file after validating, with errors.data, and runs nothing', async () => {
    const bad = [chatLine('a', 'x'), chatLine('a', 'y'), chatLine('b', 'z', '/v1/embeddings')];
    const done = await settle((await openaiBatch(bad)).id);
    expect(done.status).toBe('failed');
    expect(done.errors?.data?.map((e) => [e.code, e.line])).toEqual([
      ['duplicate_custom_id', 2],
      ['invalid_url', 3],
    ]);
    expect(done).toMatchObject({ output_file_id: null, error_file_id: null, failed_at: expect.any(Number) });
    fake.setKnobs({ batchFail: true });
    const refused = await settle((await openaiBatch([chatLine('a', 'x')])).id);
    expect(refused).toMatchObject({ status: 'failed', errors: { data: [{ code: 'token_limit_exceeded' }] } });
    expect(fake.batchStats.linesRun).toBe(0);
  });

  it('cancels: cancelling → cancelled, lines not run are in neither file', async () => {
    fake.setKnobs({ batchMs: 2000 });
    const lines = Array.from({ length: 10 }, (_, i) => chatLine(`l${i}`, `line ${i}`));
    const batch = await openaiBatch(lines);
    // Cancelled once a line has run (a line every 160 ms): some ran, the rest never will.
    await waitUntil(async () => ((await client.batches.retrieve(batch.id)).request_counts?.completed ? true : undefined), 10_000, 10);
    const cancelling = await client.batches.cancel(batch.id);
    expect(cancelling).toMatchObject({ status: 'cancelling', cancelling_at: expect.any(Number) });
    const done = await settle(batch.id);
    expect(done.status).toBe('cancelled');
    const output = await content(done.output_file_id);
    expect(output.length).toBeGreaterThan(0);
    expect(output.length).toBeLessThan(10);
    expect(done.error_file_id).toBeNull();
    expect(fake.batchStats).toMatchObject({ cancels: 1, linesRun: output.length });
    await expect(client.batches.cancel((await settle((await openaiBatch([chatLine('z', 'x')])).id)).id)).rejects.toMatchObject({ status: 409 });
  });

  it('expires with the lines not run as batch_expired errors', async () => {
    fake.setKnobs({ batchExpireAfterLines: 1 });
    const done = await settle((await openaiBatch([chatLine('a', 'x'), chatLine('b', 'y'), chatLine('c', 'z')])).id);
    expect(done).toMatchObject({ status: 'expired', expired_at: expect.any(Number), request_counts: { total: 3, completed: 1, failed: 2 } });
    expect((await content(done.output_file_id)).map((l) => l.custom_id)).toEqual(['a']);
    expect((await content(done.error_file_id)).map((l) => [l.custom_id, l.response, l.error.code])).toEqual([
      ['b', null, 'batch_expired'],
      ['c', null, 'batch_expired'],
    ]);
  });

  it('lists batches newest first, checks the key, and answers 404 for an unknown batch', async () => {
    const first = await openaiBatch([chatLine('a', 'x')]);
    const second = await openaiBatch([chatLine('a', 'x')]);
    const page = await client.batches.list({ limit: 1 });
    expect(page.data.map((b) => b.id)).toEqual([second.id]);
    expect(page.has_more).toBe(true);
    expect((await call('/openai/v1/batches?after=' + second.id, undefined, { authorization: 'Bearer k' })).json.data.map((b: J) => b.id)).toEqual([first.id]);
    expect((await call('/openai/v1/batches/' + first.id, undefined, {})).status).toBe(401);
    await expect(client.batches.retrieve('batch_nope')).rejects.toMatchObject({ status: 404 });
    const file = await client.files.retrieve(first.input_file_id);
    expect(file.bytes).toBeGreaterThan(0);
  });
});

const params = (text: string): J => ({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: text }] });

async function anthropicSettle(id: string, seen: string[] = []): Promise<J> {
  return waitUntil(async () => {
    const { status, json } = await call(`/anthropic/v1/messages/batches/${id}`);
    expect(status).toBe(200);
    if (seen.at(-1) !== json.processing_status) seen.push(json.processing_status as string);
    return json.processing_status === 'ended' ? json : undefined;
  }, 20_000, 10);
}
const results = async (id: string): Promise<J[]> => jsonl((await call(`/anthropic/v1/messages/batches/${id}/results`)).text);

describe('fake Anthropic Message Batches API', () => {
  it('runs each request through POST /messages, ends, and serves JSONL results (succeeded, errored)', async () => {
    fake.setKnobs({ batchLineErrors: { '[overloaded]': 529, '[bad]': 400 } });
    const created = await call('/anthropic/v1/messages/batches', { requests: [{ custom_id: 'a', params: params('hi there') }, { custom_id: 'b', params: params('[overloaded]') }, { custom_id: 'c', params: { ...params('x'), max_tokens: 0 } }, { custom_id: 'd', params: params('[bad]') }] });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ type: 'message_batch', processing_status: 'in_progress', request_counts: { processing: 4, succeeded: 0 }, results_url: null, ended_at: null, archived_at: null, cancel_initiated_at: null });
    expect(created.json.id).toMatch(/^msgbatch_/);
    const seen: string[] = [];
    const ended = await anthropicSettle(created.json.id as string, seen);
    expect(seen).toEqual(['in_progress', 'ended']);
    expect(ended).toMatchObject({ request_counts: { processing: 0, succeeded: 1, errored: 3, canceled: 0, expired: 0 }, ended_at: expect.any(String) });
    expect(ended.results_url).toBe(`${fake.url}/anthropic/v1/messages/batches/${created.json.id}/results`);
    const out = await results(created.json.id as string);
    const direct = await call('/anthropic/v1/messages', params('hi there'));
    expect(out[0]).toMatchObject({ custom_id: 'a', result: { type: 'succeeded', message: { type: 'message', role: 'assistant', content: direct.json.content, usage: direct.json.usage } } });
    expect(out.slice(1).map((l) => [l.custom_id, l.result.type, l.result.error.type, l.result.error.error.type])).toEqual([
      ['b', 'errored', 'error', 'overloaded_error'],
      ['c', 'errored', 'error', 'invalid_request_error'],
      ['d', 'errored', 'error', 'invalid_request_error'],
    ]);
    expect(fake.batchStats).toMatchObject({ created: 1, linesRun: 4 });
  });

  it('cancels (canceling → ended, the rest canceled) and expires (the rest expired)', async () => {
    fake.setKnobs({ batchMs: 2000 });
    const requests = Array.from({ length: 10 }, (_, i) => ({ custom_id: `r${i}`, params: params(`n ${i}`) }));
    const { json } = await call('/anthropic/v1/messages/batches', { requests });
    // Cancelled once a request has run (one every 160 ms): some ran, the rest never will.
    // (Its counts move only at the end: the fake's own count says a request ran; a read advances the batch.)
    await waitUntil(async () => ((await call(`/anthropic/v1/messages/batches/${json.id}`), fake.batchStats.linesRun) ? true : undefined), 10_000, 10);
    const canceling = await call(`/anthropic/v1/messages/batches/${json.id}/cancel`, {});
    expect(canceling.json).toMatchObject({ processing_status: 'canceling', cancel_initiated_at: expect.any(String) });
    const ended = await anthropicSettle(json.id as string);
    const counts = ended.request_counts as J;
    expect(counts.succeeded).toBeGreaterThan(0);
    expect(counts.canceled).toBeGreaterThan(0);
    expect(counts.succeeded + counts.canceled).toBe(10);
    const out = await results(json.id as string);
    expect(out.filter((l) => l.result.type === 'canceled')).toHaveLength(counts.canceled as number);
    expect(fake.batchStats).toMatchObject({ cancels: 1, linesRun: counts.succeeded });

    fake.setKnobs({ batchExpireAfterLines: 0 });
    const expiring = await call('/anthropic/v1/messages/batches', { requests: requests.slice(0, 2) });
    await anthropicSettle(expiring.json.id as string);
    expect((await results(expiring.json.id as string)).map((l) => l.result)).toEqual([{ type: 'expired' }, { type: 'expired' }]);
  });

  it('refuses invalid batches at creation, results before the end, and missing headers', async () => {
    expect((await call('/anthropic/v1/messages/batches', { requests: [] })).status).toBe(400);
    const badId = await call('/anthropic/v1/messages/batches', { requests: [{ custom_id: 'has space', params: params('x') }] });
    expect(badId.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    fake.setKnobs({ batchFail: true });
    expect((await call('/anthropic/v1/messages/batches', { requests: [{ custom_id: 'a', params: params('x') }] })).status).toBe(400);
    fake.setKnobs({ batchMs: 5000 });
    const { json } = await call('/anthropic/v1/messages/batches', { requests: [{ custom_id: 'a', params: params('x') }] });
    expect((await call(`/anthropic/v1/messages/batches/${json.id}/results`)).status).toBe(400);
    const list = await call('/anthropic/v1/messages/batches?limit=5');
    expect(list.json).toMatchObject({ data: [{ id: json.id }], has_more: false, first_id: json.id, last_id: json.id });
    expect((await call(`/anthropic/v1/messages/batches/${json.id}`, undefined, { 'x-api-key': 'k' })).status).toBe(400);
    expect((await call(`/anthropic/v1/messages/batches/${json.id}`, undefined, {})).status).toBe(401);
    expect((await call('/anthropic/v1/messages/batches/msgbatch_nope')).status).toBe(404);
    expect(await (await fetch(`${fake.url}/_fake/batches`)).json()).toEqual({ created: 1, linesRun: 0, cancels: 0, uploads: 0 });
  });

  it('lists batches newest first in Anthropic\'s pages: data, has_more, first_id, last_id; after_id older, before_id newer', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.unshift((await call('/anthropic/v1/messages/batches', { requests: [{ custom_id: `r${i}`, params: params('x') }] })).json.id as string);
    const first = await call('/anthropic/v1/messages/batches?limit=2');
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ data: [expect.objectContaining({ id: ids[0], type: 'message_batch', created_at: expect.any(String), request_counts: expect.any(Object) }), expect.objectContaining({ id: ids[1] })], has_more: true, first_id: ids[0], last_id: ids[1] });
    const second = await call(`/anthropic/v1/messages/batches?limit=2&after_id=${first.json.last_id}`);
    expect(second.json).toMatchObject({ has_more: true, first_id: ids[2], last_id: ids[3] });
    const last = await call(`/anthropic/v1/messages/batches?limit=2&after_id=${second.json.last_id}`);
    expect(last.json).toMatchObject({ data: [{ id: ids[4] }], has_more: false, first_id: ids[4], last_id: ids[4] });
    expect((await call(`/anthropic/v1/messages/batches?limit=2&before_id=${ids[4]}`)).json).toMatchObject({ has_more: true, first_id: ids[2], last_id: ids[3] });
    expect((await call(`/anthropic/v1/messages/batches?limit=2&before_id=${ids[2]}`)).json).toMatchObject({ has_more: false, first_id: ids[0], last_id: ids[1] });
    expect((await call(`/anthropic/v1/messages/batches?limit=2&before_id=${ids[1]}`)).json).toMatchObject({ data: [{ id: ids[0] }], has_more: false });
  });
});
