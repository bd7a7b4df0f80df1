/**
 * The fakes judge like the providers (fakes/definitions/README.md): a request the real provider refuses, by its
 * definition or by its per-model rules, gets that provider's own 400 body from the fake.
 */
import { startFakeProvider } from '../../../fakes/fake-provider';
import type { FakeProvider } from '../../../fakes/fake-provider';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- loosely typed wire JSON keeps the assertions readable
type J = Record<string, any>;

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(() => fake.close());

const HEADERS: Record<string, Record<string, string>> = {
  openai: { authorization: 'Bearer sk-test' },
  anthropic: { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' },
  gemini: { 'x-goog-api-key': 'g-key' },
};

async function post(kind: keyof typeof HEADERS, path: string, body: unknown): Promise<{ status: number; body: J }> {
  const res = await fetch(`${fake.url}/${kind}/${kind === 'gemini' ? 'v1beta' : 'v1'}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...HEADERS[kind] }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as J };
}

const user = [{ role: 'user', content: 'hi' }];

describe('the fake OpenAI judges by the OpenAPI document and the model rules', () => {
  it.each([
    ['an unknown chat field', '/chat/completions', { model: 'gpt-4.1', messages: user, top_k: 3 }, { message: 'Unrecognized request argument supplied: top_k', param: null, code: null }],
    ['an unknown Responses field', '/responses', { model: 'gpt-4.1', input: 'hi', max_tokens: 3 }, { message: "Unknown parameter: 'max_tokens'.", param: 'max_tokens', code: 'unknown_parameter' }],
    ['a value the schema refuses', '/chat/completions', { model: 'gpt-4.1', messages: user, temperature: 3 }, { param: 'temperature', code: 'invalid_value' }],
    ['max_output_tokens below 16', '/responses', { model: 'gpt-4.1', input: 'hi', max_output_tokens: 5 }, { param: 'max_output_tokens', code: 'invalid_value' }],
    ['an effort the model lacks', '/chat/completions', { model: 'o4-mini', messages: user, reasoning_effort: 'minimal' }, { param: 'reasoning_effort', code: 'unsupported_value' }],
    ['reasoning for a model without it', '/responses', { model: 'gpt-4.1-mini', input: 'hi', reasoning: { effort: 'low' } }, { param: 'reasoning.effort', code: 'unsupported_parameter' }],
    ['temperature on a reasoning model', '/chat/completions', { model: 'o4-mini', messages: user, temperature: 0.5 }, { param: 'temperature', code: 'unsupported_parameter' }],
  ])('refuses %s with OpenAI’s error body', async (_what, path, body, error) => {
    const res = await post('openai', path, body);
    expect(res.status).toBe(400);
    const defaults: J = { message: expect.any(String), type: 'invalid_request_error', param: null, code: null };
    expect(res.body).toEqual({ error: { ...defaults, ...error } });
  });

  it('takes what OpenAI takes', async () => {
    expect((await post('openai', '/chat/completions', { model: 'gpt-4.1', messages: user, max_completion_tokens: 5, safety_identifier: 's' })).status).toBe(200);
    expect((await post('openai', '/responses', { model: 'o4-mini', input: 'hi', reasoning: { effort: 'low', summary: 'auto' }, include: ['reasoning.encrypted_content'], store: false })).status).toBe(200);
  });
});

describe('the fake OpenAI judges reasoning items given back as OpenAI does', () => {
  const ask = { model: 'o4-mini', reasoning: { effort: 'low', summary: 'auto' }, include: ['reasoning.encrypted_content'], store: false };
  let issued: J;
  beforeAll(async () => {
    issued = (await post('openai', '/responses', { ...ask, input: 'hi' })).body.output.find((o: J) => o.type === 'reasoning');
  });
  const next = (reasoning: J) => post('openai', '/responses', { ...ask, input: [{ role: 'user', content: 'hi' }, reasoning, { role: 'assistant', content: 'Hello' }, { role: 'user', content: 'more' }] });

  it('takes its encrypted reasoning back, with the id it was issued for or without an id (as OpenAI\'s Codex sends it)', async () => {
    expect(issued).toMatchObject({ id: expect.stringMatching(/^rs_/), encrypted_content: expect.any(String) });
    expect((await next({ type: 'reasoning', id: issued.id, summary: issued.summary, encrypted_content: issued.encrypted_content })).status).toBe(200);
    expect((await next({ type: 'reasoning', summary: [], encrypted_content: issued.encrypted_content })).status).toBe(200);
    expect((await next({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Earlier thought.' }] })).status).toBe(200);
  });

  it.each([
    ['encrypted content under another id', () => ({ type: 'reasoning', id: 'rs_ours_0', summary: [], encrypted_content: issued.encrypted_content }), { code: 'invalid_encrypted_content', message: expect.stringMatching(/rs_ours_0 could not be verified. Reason: Encrypted content item_id did not match/) }],
    ['encrypted content it never issued', () => ({ type: 'reasoning', summary: [], encrypted_content: 'bm90IG91cnM=' }), { code: 'invalid_encrypted_content' }],
    ['an id without encrypted content, nothing stored', () => ({ type: 'reasoning', id: issued.id, summary: [] }), { param: 'input', message: expect.stringMatching(/^Item with id 'rs_.*' not found. Items are not persisted when `store` is set to false/) }],
  ])('refuses %s', async (_what, item, error) => {
    const res = await next(item());
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: 'invalid_request_error', ...error });
  });
});

describe('the fake Anthropic judges by the SDK types and extended thinking rules', () => {
  const base = { model: 'claude-sonnet-4-5', max_tokens: 2000, messages: user };
  const thinking = { ...base, thinking: { type: 'enabled', budget_tokens: 1024 } };
  it.each([
    ['an unknown field', { ...base, seed: 1 }, /^seed: Extra inputs are not permitted/],
    ['an empty conversation', { ...base, messages: [] }, /^messages/],
    ['thinking with temperature', { ...thinking, temperature: 0.5 }, /^`temperature` may only be set to 1 when thinking is enabled/],
    ['thinking with top_k', { ...thinking, top_k: 5 }, /^`top_k` must be unset/],
    ['thinking with a low top_p', { ...thinking, top_p: 0.5 }, /^`top_p` must be greater than or equal to 0.95/],
    ['thinking with a forced tool', { ...thinking, tools: [{ name: 'f', input_schema: { type: 'object' } }], tool_choice: { type: 'any' } }, /^Thinking may not be enabled when tool_choice forces tool use/],
    ['a budget not below max_tokens', { ...thinking, max_tokens: 1024 }, /^`max_tokens` must be greater than `thinking.budget_tokens`/],
    ['more output than the model has', { ...base, max_tokens: 100000 }, /maximum allowed number of output tokens for claude-sonnet-4-5/],
    ['a mid-conversation system message to an older model', { ...base, messages: [...user, { role: 'system', content: 'x' }] }, /^messages.1.role: Input should be 'user' or 'assistant'/],
  ])('refuses %s with Anthropic’s error body', async (_what, body, message) => {
    const res = await post('anthropic', '/messages', body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(message) } });
  });

  it('takes thinking with what it allows, and a mid-conversation system message on claude-opus-4-8', async () => {
    expect((await post('anthropic', '/messages', { ...thinking, temperature: 1, top_p: 0.96 })).status).toBe(200);
    expect((await post('anthropic', '/messages', { ...base, model: 'claude-opus-4-8', messages: [...user, { role: 'system', content: 'x' }] })).status).toBe(200);
  });
});

describe('the fake Gemini judges by the js-genai types and the thinking budgets', () => {
  const base = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };
  it.each([
    ['gemini-2.5-flash', { ...base, contents: [] }, /contents/],
    ['gemini-2.5-flash', { ...base, generationConfig: { responseSchema: { type: 'STRING', enum: ['c', null] } } }, /response_schema.enum\[1\]/],
    ['gemini-2.5-flash', { ...base, generationConfig: { responseSchema: { type: 'OBJECT', additionalProperties: false } } }, /^Invalid JSON payload received. Unknown name "additionalProperties"/],
    ['gemini-2.5-flash', { ...base, generationConfig: { thinkingConfig: { thinkingBudget: 32768 } } }, /between 0 and 24576/],
    ['gemini-2.5-pro', { ...base, generationConfig: { thinkingConfig: { thinkingBudget: 0 } } }, /only works in thinking mode/],
  ])('refuses on %s %j with Google’s error body', async (model, body, message) => {
    const res = await post('gemini', `/models/${model}:generateContent`, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: { code: 400, status: 'INVALID_ARGUMENT', message: expect.stringMatching(message) } });
  });

  it('takes budgets in range', async () => {
    expect((await post('gemini', '/models/gemini-2.5-pro:generateContent', { ...base, generationConfig: { thinkingConfig: { thinkingBudget: 128 } } })).status).toBe(200);
    expect((await post('gemini', '/models/gemini-2.5-flash:generateContent', { ...base, generationConfig: { thinkingConfig: { thinkingBudget: 0 } } })).status).toBe(200);
  });
});
