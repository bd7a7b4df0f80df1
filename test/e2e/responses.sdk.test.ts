/**
 * The Responses API as clients use it: the official openai SDK (and the Vercel AI SDK below) against the running
 * stack. Scope, cut-off answers, item references, the stored-response routes and what `store: false` keeps.
 */
import OpenAI from 'openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText, type ModelMessage } from 'ai';
import { money } from '../../shared/money';
import { seedKey } from '../helpers/fixtures';
import { leasesUnlessOff } from '../helpers/test-app';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor, waitUntil } from '../helpers/until';
import { QUEUES } from '../../shared/queue/queue-names';
import { withContent } from '../../shared/db/generation-reads';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;
/** Two members of `org`, each with a personal-account token and an API key of their own. */
let m1: { token: string; key: string; sdk: OpenAI };
let m2: { token: string; key: string; sdk: OpenAI };

const sdk = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${s.url}/v1`, maxRetries: 0 });

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '5000', ...leasesUnlessOff(16) }, knobs: { text: 'Hello from the fake provider' } });
  org = await s.seed({ balance: '100' });
  client = sdk(org.key.key);
  const member = async (email: string) => {
    const u = await org.accounts.createUser({ organizationId: org.organizationId, email, role: 'member' });
    const k = await seedKey(org.accounts, org.organizationId, { userId: u.userId, name: email });
    return { token: u.token, key: k.key, sdk: sdk(k.key) };
  };
  m1 = await member('m1@acme.test');
  m2 = await member('m2@acme.test');
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

/** The chat messages the fake OpenAI provider received last. */
const lastSent = () => (s.fake.requests.filter((r) => r.path.endsWith('/chat/completions')).at(-1)?.body ?? {}) as { messages: Array<{ role: string; content: unknown }> };

/**
 * A generation's record, read from the database. A sync reply drawn from a lease goes out once its settlement promise
 * carries the record, which commits just after: wait for the organization's promises first, as the read routes do.
 */
async function recordOf(id: string) {
  await s.settled(org.organizationId);
  // Its request and answer live in generation_contents (moved there by a trigger): read back with the record.
  return (await withContent(s.t.db, [await s.t.db.generation.findFirstOrThrow({ where: { id } })]))[0];
}

async function orgMoney() {
  await s.settled(org.organizationId);
  // Reserved as the caller sees it: without the unspent part of this process's reservation leases (requests run with them).
  const [o] = await s.ctx.keyInfo.unleased('organization_id', [await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })]);
  return { balance: money(o.balance), reserved: money(o.reserved) };
}

describe('stored responses are scoped like media and history (issue 10.3)', () => {
  it("a member's response is invisible to another member, by token and by key, and cannot be continued", async () => {
    s.fake.setKnobs({ text: 'secret of member one' });
    const r = await m1.sdk.responses.create({ model: STACK_MODELS.chat, input: 'remember my secret' });
    expect(r.status).toBe('completed');

    // The other member: personal-account token and own API key both get 404, as if it did not exist.
    for (const other of [sdk(m2.token), m2.sdk]) {
      await expect(other.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
      const before = s.fake.requests.length;
      await expect(other.responses.create({ model: STACK_MODELS.chat, input: 'what was it?', previous_response_id: r.id })).rejects.toMatchObject({ status: 404 });
      await expect(other.responses.create({ model: STACK_MODELS.chat, input: [{ type: 'item_reference', id: r.output[0].id! }] })).rejects.toMatchObject({ status: 400 });
      expect(s.fake.requests.length).toBe(before); // nothing reached the provider
    }

    // The member itself (key and token), and the organization's owner, do see it.
    expect((await sdk(m1.token).responses.retrieve(r.id)).output_text).toBe('secret of member one');
    expect((await sdk(org.ownerToken).responses.retrieve(r.id)).id).toBe(r.id);
    // Another key of the organization (the owner's) does not: a key sees its own responses.
    await expect(client.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
  });
});

describe('item references at scale', () => {
  it("resolves thousands of references to one response's items, each to its own, in the order given", async () => {
    const n = 3_000;
    const first = await client.responses.create({ model: STACK_MODELS.chat, input: Array.from({ length: n }, (_, i) => ({ role: 'user' as const, content: `line ${i}` })) });
    const ids: string[] = [];
    for await (const item of client.responses.inputItems.list(first.id, { limit: 100, order: 'asc' })) ids.push(item.id);
    expect(ids).toHaveLength(n);

    const refs = [...ids].reverse().map((id) => ({ type: 'item_reference' as const, id }));
    const second = await client.responses.create({ model: STACK_MODELS.chat, input: [...refs, { role: 'user', content: 'and?' }] });
    expect(second.status).toBe('completed');
    const sent = lastSent().messages.map((m) => JSON.stringify(m.content));
    expect(sent).toHaveLength(n + 1);
    expect(sent.filter((c, i) => (i < n ? !c.includes(`"line ${n - 1 - i}"`) : !c.includes('and?')))).toEqual([]);
  });
});

describe('a cut-off answer is incomplete (issue 9.2)', () => {
  const long = 'word '.repeat(200);

  it('answers status incomplete with incomplete_details when output stops at max_output_tokens, and bills what was produced', async () => {
    s.fake.setKnobs({ text: long });
    const before = await orgMoney();
    const r = await client.responses.create({ model: STACK_MODELS.chat, input: 'talk', max_output_tokens: 16 });
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(r.output_text.length).toBeGreaterThan(0);
    expect((r.usage as unknown as { output_tokens: number }).output_tokens).toBe(16);
    const charged = before.balance.minus((await orgMoney()).balance);
    expect(charged.toNumber()).toBeCloseTo((r.usage as unknown as { cost_rub: number }).cost_rub, 10);
    expect(charged.greaterThan(0)).toBe(true);
    // Reading it back says the same.
    const got = await client.responses.retrieve(r.id);
    expect(got.status).toBe('incomplete');
    expect(got.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('ends the stream with response.incomplete instead of response.completed', async () => {
    s.fake.setKnobs({ text: long, streamChunks: 4 });
    const stream = await client.responses.create({ model: STACK_MODELS.chat, input: 'talk', max_output_tokens: 16, stream: true });
    const types: string[] = [];
    let final: OpenAI.Responses.Response | undefined;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.incomplete') final = ev.response;
    }
    expect(types.at(-1)).toBe('response.incomplete');
    expect(types).not.toContain('response.completed');
    expect(final?.status).toBe('incomplete');
    expect(final?.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('chat completions keep finish_reason length', async () => {
    s.fake.setKnobs({ text: long });
    const c = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'talk' }], max_tokens: 16 });
    expect(c.choices[0].finish_reason).toBe('length');
  });
});

describe('the Vercel AI SDK keeps every turn (issue 9.1)', () => {
  /** The `input` Switchyard received for a response (the SDK's own request, as recorded). */
  const receivedInput = async (id: string) => ((await recordOf(id)).request as { body: { input: unknown } }).body.input;

  it('resolves the item_reference the AI SDK sends for earlier assistant turns, plain and streamed', async () => {
    const model = createOpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1` }).responses(STACK_MODELS.chat);
    const messages: ModelMessage[] = [{ role: 'user', content: 'Who are you?' }];

    s.fake.setKnobs({ text: 'I am Duo' });
    const first = await generateText({ model, messages, maxRetries: 0 });
    expect(first.text).toBe('I am Duo');
    messages.push(...first.response.messages, { role: 'user', content: 'Again?' });

    s.fake.setKnobs({ text: 'Still Duo', streamChunks: 3 });
    const second = streamText({ model, messages, maxRetries: 0 });
    expect(await second.text).toBe('Still Duo');
    let sent = lastSent();
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(JSON.stringify(sent.messages[1])).toContain('I am Duo');
    const secondId = (await second.response).id;
    expect(await receivedInput(secondId)).toEqual(expect.arrayContaining([{ type: 'item_reference', id: expect.stringMatching(/^msg_/) }]));
    messages.push(...(await second.response).messages, { role: 'user', content: 'And now?' });

    // The streamed turn's item ids resolve too.
    s.fake.setKnobs({ text: 'Duo, thrice' });
    const third = await generateText({ model, messages, maxRetries: 0 });
    expect(third.text).toBe('Duo, thrice');
    sent = lastSent();
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(JSON.stringify(sent.messages[3])).toContain('Still Duo');
    expect(JSON.stringify(await receivedInput(third.response.id))).toMatch(/item_reference.*item_reference/);
  });

  it('answers 400 naming an item_reference that does not exist, and reaches no provider', async () => {
    const before = s.fake.requests.length;
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'hi' }, { type: 'item_reference', id: 'msg_doesNotExist_0' }];
    await expect(client.responses.create({ model: STACK_MODELS.chat, input })).rejects.toMatchObject({ status: 400, message: expect.stringContaining("'msg_doesNotExist_0'") });
    await expect(client.responses.create({ model: STACK_MODELS.chat, input: [{ type: 'item_reference', id: 'garbage' }] })).rejects.toMatchObject({ status: 400 });
    expect(s.fake.requests.length).toBe(before);
  });
});

describe('store: false keeps no text, and output limits are bounded (issue 10.11)', () => {
  it('a store: false response keeps only what billing and history need, in the database and in Redis', async () => {
    s.fake.setKnobs({ text: 'the confidential answer' });
    const r = await client.responses.create({ model: STACK_MODELS.chat, input: 'my confidential question', instructions: 'secret instructions', store: false });
    expect(r.output_text).toBe('the confidential answer'); // the caller still gets the answer
    const streamed = await client.responses.create({ model: STACK_MODELS.chat, input: 'my confidential question', store: false, stream: true });
    let streamedId = '';
    for await (const ev of streamed) if (ev.type === 'response.completed') streamedId = ev.response.id;

    for (const id of [r.id, streamedId]) {
      const g = await recordOf(id);
      const kept = JSON.stringify([g.request, g.result, g.usage, g.warnings, g.error, g.routing]);
      expect(kept).not.toContain('confidential');
      expect(kept).not.toContain('secret instructions');
      // Billing and history metadata stay.
      expect(g).toMatchObject({ status: 'completed', finishReason: 'stop', apiType: 'responses' });
      expect(money(g.clientCost).greaterThan(0)).toBe(true);
      expect(g.usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) });
      // The job (whose payload carries the conversation) is gone from Redis once done.
      expect(await s.ctx.queues.text.getJob(id)).toBeUndefined();
      await expect(client.responses.retrieve(id)).rejects.toMatchObject({ status: 404 });
    }
    // A stored response, for contrast, keeps its conversation.
    const kept = await client.responses.create({ model: STACK_MODELS.chat, input: 'ordinary question' });
    expect(JSON.stringify((await recordOf(kept.id)).request)).toContain('ordinary question');
  });

  it('a repeat of a store: false request (same Idempotency-Key) is a 409, not an empty answer', async () => {
    s.fake.setKnobs({ text: 'said once' });
    const body = { model: STACK_MODELS.chat, input: 'once', store: false };
    const headers = { 'Idempotency-Key': 'store-false-repeat' };
    expect((await client.responses.create(body, { headers })).output_text).toBe('said once');
    await expect(client.responses.create(body, { headers })).rejects.toMatchObject({ status: 409, message: expect.stringContaining('store: false') });
  });

  it('refuses background: true with store: false', async () => {
    await expect(client.responses.create({ model: STACK_MODELS.chat, input: 'x', background: true, store: false })).rejects.toMatchObject({ status: 400 });
  });

  it('refuses max_output_tokens above the model limit (1e300, and anything above the catalog maxOutputTokens) with 400', async () => {
    const before = s.fake.requests.length;
    await expect(client.responses.create({ model: STACK_MODELS.chat, input: 'x', max_output_tokens: 1e300 })).rejects.toMatchObject({ status: 400 });
    // The stack's model allows 4096 output tokens.
    await expect(client.responses.create({ model: STACK_MODELS.chat, input: 'x', max_output_tokens: 4097 })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('at most 4096'),
    });
    await expect(client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'x' }], max_tokens: 1e300 })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('max_tokens'),
    });
    expect(s.fake.requests.length).toBe(before);
    const ok = await client.responses.create({ model: STACK_MODELS.chat, input: 'x', max_output_tokens: 4096 });
    expect(ok.status).toBe('completed');
  });
});

describe('stored-response routes the SDKs expose (issue 9.5)', () => {
  const waitEnded = (id: string) =>
    waitUntil(async () => {
      const g = await recordOf(id);
      return g.status !== 'pending' && g.status !== 'processing' ? g : undefined;
    }).catch(() => {
      throw new Error(`${id} never ended`);
    });

  it('responses.inputItems.list lists this turn\'s input items, newest first by default, with order, after and limit', async () => {
    const first = await client.responses.create({ model: STACK_MODELS.chat, input: 'earlier turn' });
    const r = await client.responses.create({
      model: STACK_MODELS.chat,
      previous_response_id: first.id,
      input: [
        { role: 'user', content: 'one' },
        { role: 'user', content: [{ type: 'input_text', text: 'two' }] },
        { type: 'function_call_output', call_id: 'call_1', output: 'three' },
      ],
    });
    const text = (i: OpenAI.Responses.ResponseItem) =>
      i.type === 'message' ? (i.content[0] as { text: string }).text : i.type === 'function_call_output' ? (i.output as string) : i.type;

    const page = await client.responses.inputItems.list(r.id);
    expect(page.data.map(text)).toEqual(['three', 'two', 'one']); // the previous turn is not this response's input
    expect(page.has_more).toBe(false);
    expect(page.data[2]).toMatchObject({ type: 'message', role: 'user', status: 'completed', id: expect.stringMatching(/^msg_/) });

    const asc = await client.responses.inputItems.list(r.id, { order: 'asc', limit: 2 });
    expect(asc.data.map(text)).toEqual(['one', 'two']);
    expect(asc.has_more).toBe(true);
    const all: string[] = [];
    for await (const item of client.responses.inputItems.list(r.id, { order: 'asc', limit: 1 })) all.push(text(item));
    expect(all).toEqual(['one', 'two', 'three']); // the SDK pages with `after`

    // An input item can be referenced like an output item.
    await client.responses.create({ model: STACK_MODELS.chat, input: [{ type: 'item_reference', id: page.data[2].id }] });
    expect(JSON.stringify(lastSent().messages)).toContain('one');

    await expect(client.responses.inputItems.list(r.id, { limit: 101 })).rejects.toMatchObject({ status: 400 });
    await expect(m2.sdk.responses.inputItems.list(r.id)).rejects.toMatchObject({ status: 404 });
  });

  it('responses.delete removes the conversation, keeps the billing record, and answers 404 afterwards', async () => {
    s.fake.setKnobs({ text: 'forget me' });
    const r = await client.responses.create({ model: STACK_MODELS.chat, input: 'private words' });
    await expect(m1.sdk.responses.delete(r.id)).rejects.toMatchObject({ status: 404 }); // not theirs
    const raw = await fetch(`${s.url}/v1/responses/${r.id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${org.key.key}` } });
    expect(raw.status).toBe(200);
    expect(await raw.json()).toEqual({ id: r.id, object: 'response', deleted: true });
    const g = await recordOf(r.id);
    expect(JSON.stringify([g.request, g.result])).not.toMatch(/private words|forget me/);
    expect(money(g.clientCost).greaterThan(0)).toBe(true);
    await expect(client.responses.retrieve(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.delete(r.id)).rejects.toMatchObject({ status: 404 });
    await expect(client.responses.create({ model: STACK_MODELS.chat, input: 'x', previous_response_id: r.id })).rejects.toMatchObject({ status: 404 });

    const other = await client.responses.create({ model: STACK_MODELS.chat, input: 'x' });
    await client.responses.delete(other.id); // the SDK's own call
    await expect(client.responses.retrieve(other.id)).rejects.toMatchObject({ status: 404 });
  });

  it('responses.cancel cancels a queued or running background response and releases its money; a finished one is a 400', async () => {
    s.fake.setKnobs({ holdReplies: true });
    const before = await orgMoney();
    const r = await client.responses.create({ model: STACK_MODELS.chat, input: 'slow', background: true });
    expect(r.status).toBe('queued');
    const cancelled = await client.responses.cancel(r.id);
    expect(cancelled.status).toBe('cancelled');
    expect((await client.responses.cancel(r.id)).status).toBe('cancelled'); // again: the same answer
    // Its job has ended and its provider call with it (cut, or let go here and answered after all: too late).
    s.fake.setKnobs({});
    const live = ['active', 'waiting', 'delayed', 'prioritized'];
    await waitFor('the job and its provider call to end', async () => !live.includes(await s.ctx.queues[QUEUES.text].getJobState(r.id)) && s.fake.requests.every((q) => q.endedAt !== undefined));
    const after = await orgMoney();
    expect(after.balance.equals(before.balance)).toBe(true);
    expect(after.reserved.isZero()).toBe(true);
    expect((await client.responses.retrieve(r.id)).status).toBe('cancelled');

    const done = await client.responses.create({ model: STACK_MODELS.chat, input: 'quick', background: true });
    await waitEnded(done.id);
    await expect(client.responses.cancel(done.id)).rejects.toMatchObject({ status: 400 });
    const foreground = await client.responses.create({ model: STACK_MODELS.chat, input: 'quick' });
    await expect(client.responses.cancel(foreground.id)).rejects.toMatchObject({ status: 400 });
    await expect(m2.sdk.responses.cancel(r.id)).rejects.toMatchObject({ status: 404 });
  });

  it('resumes a background stream with responses.retrieve(id, { stream: true, starting_after })', async () => {
    s.fake.setKnobs({ text: 'one two three four five six', streamChunks: 6, chunkDelayMs: 100 });
    const stream = await client.responses.create({ model: STACK_MODELS.chat, input: 'count', background: true, stream: true });
    const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of stream) {
      seen.push(ev);
      if (ev.type === 'response.output_text.delta') break; // the client drops after the first delta
    }
    const id = (seen[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    const last = seen.at(-1)!.sequence_number;

    const resumed = await client.responses.retrieve(id, { stream: true, starting_after: last });
    const rest: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of resumed) rest.push(ev);
    const all = [...seen, ...rest];
    expect(all.map((e) => e.sequence_number)).toEqual(all.map((_, i) => i)); // nothing lost, nothing twice
    expect(all.at(-1)?.type).toBe('response.completed');
    const text = all.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe('one two three four five six');

    // From the start, after the end: the same events again.
    const again: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await client.responses.retrieve(id, { stream: true })) again.push(ev);
    expect(again).toEqual(all);
    // Retrieved plainly, the output item ids are the streamed ones (what item_reference needs).
    const plain = await client.responses.retrieve(id);
    const done = all.find((e) => e.type === 'response.completed') as OpenAI.Responses.ResponseCompletedEvent;
    expect(plain.output.map((o) => o.id)).toEqual(done.response.output.map((o) => o.id));
  });

  it('a cancelled background stream ends with response.failed for every reader, charged for the text that reached its client (decisions.md section 4)', async () => {
    s.fake.setKnobs({ text: 'a b c d e f g h', streamChunks: 8, chunkDelayMs: 150 });
    const before = await orgMoney();
    const stream = await client.responses.create({ model: STACK_MODELS.chat, input: 'long', background: true, stream: true });
    let id = '';
    for await (const ev of stream) {
      if (ev.type === 'response.created') id = ev.response.id;
      if (ev.type === 'response.output_text.delta') break;
    }
    expect((await client.responses.cancel(id)).status).toBe('cancelled');
    const types: string[] = [];
    let final: OpenAI.Responses.Response | undefined;
    for await (const ev of await client.responses.retrieve(id, { stream: true })) {
      types.push(ev.type);
      if (ev.type === 'response.failed') final = ev.response;
    }
    expect(types.at(-1)).toBe('response.failed');
    expect(final?.error?.message).toMatch(/cancelled/);
    const after = await orgMoney();
    const cost = before.balance.minus(after.balance);
    expect(cost.greaterThan(0)).toBe(true);
    expect((final?.usage as unknown as { cost_rub: number }).cost_rub).toBeCloseTo(cost.toNumber(), 6);
    expect(after.reserved.isZero()).toBe(true);
  });

  it('streams a background response created without stream once it has ended, after starting_after', async () => {
    s.fake.setKnobs({ text: 'later text', latencyMs: 300 });
    const r = await client.responses.create({ model: STACK_MODELS.chat, input: 'later', background: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await client.responses.retrieve(r.id, { stream: true })) events.push(ev);
    expect(events[0].type).toBe('response.created');
    expect(events.at(-1)?.type).toBe('response.completed');
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const tail: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of await client.responses.retrieve(r.id, { stream: true, starting_after: 3 })) tail.push(ev);
    expect(tail).toEqual(events.slice(4));
    // A response made in the foreground cannot be streamed again.
    const plain = await client.responses.create({ model: STACK_MODELS.chat, input: 'x' });
    await expect(client.responses.retrieve(plain.id, { stream: true })).rejects.toMatchObject({ status: 400 });
  });
});
