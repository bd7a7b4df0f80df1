/**
 * What the Vercel AI SDK and LangChain JS do with a synchronous call that outlives SYNC_WAIT_MS (408
 * REQUEST_TIMEOUT), through the real clients against a running Switchyard whose fake provider is slow.
 * Neither reads `x-should-retry` (docs/clients.md "Retries"): the AI SDK's APICallError.isRetryable comes from the
 * status alone, LangChain's AsyncCaller retries every status outside its own list and runs the openai client under it
 * with maxRetries 0. So a keyless 408 is re-sent, each time a new generation (each cancelled, none charged); a
 * per-call `Idempotency-Key` makes their retries join the one generation and return its answer, charged once.
 */
import { APICallError, generateText, RetryError } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { randomUUID } from 'node:crypto';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney } from '../helpers/fixtures';
import { waitUntil } from '../helpers/until';

const SYNC_WAIT_MS = 1000;
const TEXT = 'Worth the wait';
// gpt-4.1-mini in the stack catalog: 40 RUB per million prompt tokens, 160 per million completion tokens.
const COST = (1000 * 40 + 500 * 160) / 1_000_000;

let s: TestStack;

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) }, knobs: { promptTokens: 1000, completionTokens: 500, text: TEXT } });
});
afterAll(() => s.close());

/** A fresh organization per test, so its generations and charges are this test's alone. */
async function slowProvider(latencyMs: number) {
  s.fake.reset();
  s.fake.setKnobs({ latencyMs, promptTokens: 1000, completionTokens: 500, text: TEXT });
  return s.seed({ balance: '10' });
}
async function outcome(org: StackOrg) {
  await s.settled(org.organizationId);
  const generations = await s.t.db.generation.findMany({ where: { organizationId: org.organizationId }, select: { status: true } });
  const charges = await s.t.db.ledgerEntry.count({ where: { organizationId: org.organizationId, kind: 'charge' } });
  const money = await orgMoney(s.t.db, org.organizationId);
  return { generations: generations.map((g) => g.status).sort(), upstream: s.fake.requests.length, charges, spent: money.balance.negated().plus(10).toNumber(), reserved: money.reserved.toNumber() };
}
type HttpError = { status?: number; headers?: Headers };
const failure = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as HttpError);
/** A keyless 408 cancels its job: wait until every generation of the organization has ended. */
const ended = (org: StackOrg) =>
  waitUntil(async () => ((await s.t.db.generation.count({ where: { organizationId: org.organizationId, status: { in: ['pending', 'processing'] } } })) === 0 ? true : undefined));

describe('Vercel AI SDK (ai + @ai-sdk/openai): a 408', () => {
  const model = (org: StackOrg) => createOpenAI({ baseURL: `${s.url}/v1`, apiKey: org.key.key })(STACK_MODELS.chat);

  it('without a key is re-sent twice (isRetryable from the status only, x-should-retry unread): three generations, each cancelled, none charged', async () => {
    const org = await slowProvider(SYNC_WAIT_MS + 4000);
    const err = await generateText({ model: model(org), prompt: 'slow' }).catch((e: unknown) => e); // default maxRetries: 2
    expect(RetryError.isInstance(err)).toBe(true);
    const last = (err as RetryError).lastError as APICallError;
    expect([last.statusCode, last.isRetryable, last.responseHeaders?.['x-should-retry']]).toEqual([408, true, 'false']);
    expect((err as RetryError).errors).toHaveLength(3);
    await ended(org);
    expect(await outcome(org)).toEqual({ generations: ['cancelled', 'cancelled', 'cancelled'], upstream: 3, charges: 0, spent: 0, reserved: 0 });
  });

  it("with a per-call Idempotency-Key its retries join the one generation: the answer arrives, one upstream call, one charge", async () => {
    const org = await slowProvider(SYNC_WAIT_MS + 2500); // the first retry (2 s after the 408) waits for it
    const r = await generateText({ model: model(org), prompt: 'slow', headers: { 'Idempotency-Key': randomUUID() } });
    expect(r.text).toBe(TEXT);
    expect(await outcome(org)).toEqual({ generations: ['completed'], upstream: 1, charges: 1, spent: COST, reserved: 0 });
  });
});

describe('LangChain JS (@langchain/openai): a 408', () => {
  const chat = (org: StackOrg, extra: Partial<ConstructorParameters<typeof ChatOpenAI>[0]> = {}) =>
    new ChatOpenAI({ model: STACK_MODELS.chat, apiKey: org.key.key, configuration: { baseURL: `${s.url}/v1` }, maxRetries: 2, ...extra });

  it('without a key is re-sent (408 is not in its AsyncCaller no-retry list): maxRetries 2 starts three generations, none charged', async () => {
    const org = await slowProvider(SYNC_WAIT_MS + 4000);
    const err = await failure(chat(org).invoke('slow'));
    expect([err?.status, err?.headers?.get('x-should-retry')]).toEqual([408, 'false']);
    await ended(org);
    expect(await outcome(org)).toEqual({ generations: ['cancelled', 'cancelled', 'cancelled'], upstream: 3, charges: 0, spent: 0, reserved: 0 });
  });

  it('an onFailedAttempt that honours x-should-retry stops at the first keyless 408: one generation', async () => {
    const org = await slowProvider(SYNC_WAIT_MS + 4000);
    const onFailedAttempt = (e: HttpError) => {
      if (e?.headers?.get?.('x-should-retry') === 'false') throw e;
    };
    const err = await failure(chat(org, { onFailedAttempt } as never).invoke('slow'));
    expect(err?.status).toBe(408);
    await ended(org);
    expect(await outcome(org)).toEqual({ generations: ['cancelled'], upstream: 1, charges: 0, spent: 0, reserved: 0 });
  });

  it('with a per-call Idempotency-Key (options.headers) its retries join the one generation: the answer, one charge', async () => {
    const org = await slowProvider(SYNC_WAIT_MS + 2500);
    const m = await chat(org).invoke('slow', { options: { headers: { 'Idempotency-Key': randomUUID() } } });
    expect(m.content).toBe(TEXT);
    expect(await outcome(org)).toEqual({ generations: ['completed'], upstream: 1, charges: 1, spent: COST, reserved: 0 });
  });
});
