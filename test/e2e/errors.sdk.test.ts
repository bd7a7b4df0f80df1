/**
 * Our errors as the official `openai` Node SDK reads them: `err.type` and `err.param` (OpenAI's fields, beside our
 * own `code`, `metadata` and `details`), a message naming the field, and every provider rate-limiting as a 429
 * RateLimitError that the SDK retries after `Retry-After` (decisions.md section 3).
 */
import OpenAI from 'openai';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;
const TEXT = 'Hello from the fake provider';

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '10000' }, knobs: { text: TEXT } });
  org = await s.seed({ balance: '100' });
  client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());
beforeEach(() => {
  s.fake.reset();
  s.fake.setKnobs({ text: TEXT });
});

const caught = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);

describe('errors carry OpenAI\'s type and param', () => {
  it('empty messages: BadRequestError with type invalid_request_error, param messages, a message naming it, and our code', async () => {
    const err = await caught(client.chat.completions.create({ model: STACK_MODELS.chat, messages: [] }));
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err?.type).toBe('invalid_request_error');
    expect(err?.param).toBe('messages');
    expect(err?.message).toMatch(/^400 .*messages/);
    expect(err?.code).toBe('BAD_REQUEST');
    expect(err?.error).toMatchObject({ metadata: { reason: 'validation_failed' }, details: { errors: [{ path: '/messages' }] } });
  });

  it('a nested field is named in the SDK\'s notation (messages[0].content)', async () => {
    const err = await caught(client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 5 as unknown as string }] }));
    expect(err?.param).toBe('messages[0].content');
    expect(err?.message).toContain('messages[0].content');
  });

  it('a missing input of /v1/responses names input', async () => {
    const err = await caught(client.responses.create({ model: STACK_MODELS.chat } as never));
    expect([err?.status, err?.type, err?.param]).toEqual([400, 'invalid_request_error', 'input']);
  });

  it('each kind of failure has its type, and param null when no field is at fault', async () => {
    const notFound = await caught(client.responses.create({ model: 'nope/unknown', input: 'x' }));
    expect([notFound?.status, notFound?.type, notFound?.param, notFound?.code]).toEqual([404, 'not_found_error', null, 'NOT_FOUND']);
    const bad = new OpenAI({ apiKey: 'sy_' + 'x'.repeat(40), baseURL: `${s.url}/v1`, maxRetries: 0 });
    const unauthorized = await caught(bad.responses.create({ model: STACK_MODELS.chat, input: 'x' }));
    expect([unauthorized?.status, unauthorized?.type, unauthorized?.param]).toEqual([401, 'authentication_error', null]);
    const poor = await s.seed({ balance: '0' });
    const broke = new OpenAI({ apiKey: poor.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
    const quota = await caught(broke.responses.create({ model: STACK_MODELS.chat, input: 'x' }));
    expect([quota?.status, quota?.type]).toEqual([402, 'insufficient_quota']);
  });
});

describe('every provider rate-limiting is a 429 the SDK retries', () => {
  it('maxRetries 0: RateLimitError 429 with Retry-After, reason all_providers_failed and the attempts', async () => {
    s.fake.setKnobs({ status: 429, retryAfterSeconds: 1 });
    const err = await caught(client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err?.status).toBe(429);
    expect(err?.type).toBe('rate_limit_error');
    expect(err?.code).toBe('TOO_MANY_REQUESTS');
    expect(Number(err?.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = err?.error as { metadata: { reason: string; attempts: Array<{ reason: string }> } };
    expect(body.metadata.reason).toBe('all_providers_failed');
    expect(body.metadata.attempts.length).toBeGreaterThan(0);
    expect(body.metadata.attempts.every((a) => a.reason === 'rate_limited')).toBe(true);
  });

  it('maxRetries 1: the SDK waits the Retry-After and its one retry is answered', async () => {
    // The gateway's own wait and retry fail too (two 429s), so the caller gets the 429; the third call answers.
    s.fake.setKnobs({ status: 429, failTimes: 2, retryAfterSeconds: 1, text: TEXT });
    const statuses: number[] = [];
    const recorded: typeof fetch = async (url, init) => {
      const r = await fetch(url, init);
      statuses.push(r.status);
      return r;
    };
    const retrying = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 1, fetch: recorded });
    const { data, response } = await retrying.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    expect(data.choices[0].message.content).toBe(TEXT);
    expect(response.status).toBe(200);
    expect(statuses).toEqual([429, 200]);
    expect(s.fake.requests).toHaveLength(3);
  });
});
