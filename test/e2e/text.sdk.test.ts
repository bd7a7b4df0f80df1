import OpenAI from 'openai';
import { money } from '../../shared/money';
import { leasesUnlessOff } from '../helpers/test-app';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;

beforeAll(async () => {
  s = await createTestStack({ env: leasesUnlessOff(16), knobs: { promptTokens: 1000, completionTokens: 500, text: 'Hello from the fake provider' } });
  org = await s.seed({ balance: '100' });
  client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());

async function balance() {
  await s.settled(org.organizationId);
  // Reserved as the caller sees it: without the unspent part of this process's reservation leases (requests run with them).
  const [o] = await s.ctx.keyInfo.unleased('organization_id', [await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })]);
  return { balance: money(o.balance), reserved: money(o.reserved), spent: money(o.spent) };
}

// gpt-4.1-mini in the stack catalog: 40 RUB per million prompt tokens, 160 per million completion tokens.
const EXPECTED_COST = (1000 * 40 + 500 * 160) / 1_000_000; // 0.12 RUB

describe('the official openai SDK against Switchyard', () => {
  it('responses.create answers a Response with usage and cost, and charges exactly the usage', async () => {
    const before = await balance();
    const r = await client.responses.create({ model: STACK_MODELS.chat, input: 'Say hello', metadata: { run: 'sdk' } });
    expect(r.object).toBe('response');
    expect(r.status).toBe('completed');
    expect(r.output_text).toBe('Hello from the fake provider');
    expect(r.metadata).toEqual({ run: 'sdk' });
    const usage = r.usage as unknown as Record<string, unknown>;
    expect(usage).toMatchObject({ input_tokens: 1000, output_tokens: 500, total_tokens: 1500, cost_rub: EXPECTED_COST, cost: EXPECTED_COST });
    expect((r as unknown as { switchyard: unknown }).switchyard).toEqual({});
    const after = await balance();
    expect(before.balance.minus(after.balance).toNumber()).toBeCloseTo(EXPECTED_COST, 10);
    expect(after.reserved.isZero()).toBe(true);
    const got = await client.responses.retrieve(r.id);
    expect(got.status).toBe('completed');
    expect(got.output_text).toBe('Hello from the fake provider');
  });

  it('responses.create with stream: true yields the Responses SSE events, with the cost in response.completed', async () => {
    const stream = await client.responses.create({ model: STACK_MODELS.chat, input: 'Stream please', stream: true });
    const types: string[] = [];
    let text = '';
    let completed: Record<string, unknown> | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response.usage as unknown as Record<string, unknown>;
    }
    expect(text).toBe('Hello from the fake provider');
    expect(types[0]).toBe('response.created');
    expect(types).toEqual(
      expect.arrayContaining(['response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.output_item.done']),
    );
    expect(types[types.length - 1]).toBe('response.completed');
    expect(completed).toMatchObject({ cost_rub: EXPECTED_COST, input_tokens: 1000, output_tokens: 500 });
  });

  it('chat.completions.create answers plain and streamed, with include_usage', async () => {
    const c = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] });
    expect(c.choices[0].message.content).toBe('Hello from the fake provider');
    expect(c.choices[0].finish_reason).toBe('stop');
    expect(c.usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 });

    const stream = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: unknown;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('Hello from the fake provider');
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: 1000, completion_tokens: 500, cost_rub: EXPECTED_COST });
  });

  it('embeddings.create answers floats and base64 (little-endian float32) for each input, in order', async () => {
    const floats = await client.embeddings.create({ model: STACK_MODELS.embedding, input: ['alpha', 'beta'], encoding_format: 'float' });
    expect(floats.data.map((d) => d.index)).toEqual([0, 1]);
    expect(floats.data[0].embedding.length).toBeGreaterThan(0);
    // The SDK asks for base64 by default and decodes it back into floats.
    const viaBase64 = await client.embeddings.create({ model: STACK_MODELS.embedding, input: ['alpha', 'beta'] });
    viaBase64.data.forEach((d, i) => d.embedding.forEach((v, j) => expect(v).toBeCloseTo(floats.data[i].embedding[j], 6)));
    expect(floats.usage).toMatchObject({ prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) });
  });

  it('models.list lists the catalog', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(expect.arrayContaining([STACK_MODELS.chat, STACK_MODELS.embedding]));
  });

  it('maps errors to the SDK error classes with our envelope', async () => {
    await expect(client.responses.create({ model: 'nope/unknown', input: 'x' })).rejects.toMatchObject({ status: 404 });
    const bad = new OpenAI({ apiKey: 'sy_' + 'x'.repeat(40), baseURL: `${s.url}/v1`, maxRetries: 0 });
    await expect(bad.responses.create({ model: STACK_MODELS.chat, input: 'x' })).rejects.toMatchObject({ status: 401 });
  });

  it('surfaces our trace id as the request id: results, streams, errors and 404s (x-request-id)', async () => {
    const c = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] });
    const chatId = (c as unknown as { _request_id?: string })._request_id;
    expect(chatId).toMatch(/^[0-9a-f-]{36}$/);

    const { data: stream, request_id: streamId, response } = await client.chat.completions
      .create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }], stream: true })
      .withResponse();
    for await (const _chunk of stream) void _chunk;
    expect(streamId).toMatch(/^[0-9a-f-]{36}$/);
    expect(response.headers.get('x-trace-id')).toBe(streamId);

    const e = await client.embeddings.create({ model: STACK_MODELS.embedding, input: 'x' });
    expect((e as unknown as { _request_id?: string })._request_id).toMatch(/^[0-9a-f-]{36}$/);

    const err = await client.responses.create({ model: 'nope/unknown', input: 'x' }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const apiErr = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiErr.requestID).toMatch(/^[0-9a-f-]{36}$/);
    expect((apiErr.error as { trace_id?: string }).trace_id).toBe(apiErr.requestID);

    // A route that does not exist answers our 404 envelope, with the header too.
    const missing = await fetch(`${s.url}/v1/nothing-here`, { headers: { authorization: `Bearer ${org.key.key}` } });
    expect(missing.status).toBe(404);
    const body = (await missing.json()) as { trace_id: string };
    expect(missing.headers.get('x-request-id')).toBe(body.trace_id);
  });
});
