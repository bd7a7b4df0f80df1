/**
 * A stream that does not end well shows, charges and records ONE number (decisions.md section 4): the cost in
 * the final event's `usage`, the history record's `clientCost`, the ledger's charge and the balance's change.
 * Content reached the client: charged for what was produced, however the stream ends (a provider failure, a
 * timeout, the client leaving, a cancel or delete through the API). Nothing reached it: nothing charged.
 * Real HTTP streams against the fake provider (raw sockets, and the official openai SDK); responses and chat completions.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { money, type Decimal } from '../../shared/money';
import { QUEUES } from '../../shared/queue/queue-names';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor } from '../helpers/until';
import { withContent } from '../../shared/db/generation-reads';

const SYNC_WAIT_MS = 3000;
let s: TestStack;

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) } });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

type Api = 'responses' | 'chat';

interface Streamed {
  /** Raw SSE `data:` payloads, parsed. */
  events: Array<Record<string, unknown>>;
  /** Content deltas the client received. */
  deltas: number;
}

/** POSTs a streaming request over a real socket; with `leaveAfter`, hangs up after that many content deltas. */
function openStream(api: Api, org: StackOrg, opts: { leaveAfter?: number } = {}): Promise<Streamed> {
  const body =
    api === 'responses'
      ? { model: STACK_MODELS.chat, input: 'Tell me a story', stream: true, max_output_tokens: 400 }
      : { model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'Tell me a story' }], stream: true, max_tokens: 400, stream_options: { include_usage: true } };
  const path = api === 'responses' ? '/v1/responses' : '/v1/chat/completions';
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${s.url}${path}`, { method: 'POST', headers: { ...org.auth, 'content-type': 'application/json' } }, (res: IncomingMessage) => {
      const out: Streamed = { events: [], deltas: 0 };
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const data = frame.split('\n').find((l) => l.startsWith('data: '))?.slice(6);
          if (!data || data === '[DONE]') continue;
          const ev = JSON.parse(data) as Record<string, unknown>;
          out.events.push(ev);
          if (isDelta(api, ev)) out.deltas++;
          if (opts.leaveAfter !== undefined && out.deltas >= opts.leaveAfter) {
            req.destroy();
            resolve(out);
            return;
          }
        }
      });
      res.on('end', () => resolve(out));
      res.on('error', () => resolve(out));
    });
    req.on('error', (e) => (opts.leaveAfter !== undefined ? undefined : reject(e)));
    req.end(JSON.stringify(body));
  });
}

function isDelta(api: Api, ev: Record<string, unknown>): boolean {
  if (api === 'responses') return ev.type === 'response.output_text.delta';
  const choices = ev.choices as Array<{ delta?: { content?: string } }> | undefined;
  return !!choices?.[0]?.delta?.content;
}

/** The cost the stream's last events report (0 when they carry no usage). */
function eventCost(api: Api, st: Streamed): number {
  if (api === 'responses') {
    const last = st.events.at(-1) as { type: string; response: { usage: { cost_rub: number } | null } };
    expect(last.type).toBe('response.failed');
    return last.response.usage?.cost_rub ?? 0;
  }
  expect(st.events.at(-1)).toHaveProperty('error');
  const usage = st.events.find((e) => Array.isArray(e.choices) && (e.choices as unknown[]).length === 0 && e.usage) as { usage: { cost_rub: number } } | undefined;
  return usage?.usage.cost_rub ?? 0;
}

/** Waits for the org's one generation to end, then reads the history record, the ledger and the balance. */
async function settled(org: StackOrg, balanceBefore: Decimal) {
  await waitFor('the generation to end', async () => {
    const g = await s.t.db.generation.findFirst({ where: { organizationId: org.organizationId } });
    return !!g && g.status !== 'pending' && g.status !== 'processing';
  });
  await s.settled(org.organizationId);
  const [g] = await withContent(s.t.db, [await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId } })]);
  const detail = await fetch(`${s.url}/v1/history/generations/${g.id}`, { headers: org.auth }).then((r) => r.json() as Promise<{ clientCost: string }>);
  const entries = await s.t.db.ledgerEntry.findMany({ where: { generationId: g.id } });
  const debit = entries.reduce((sum, e) => sum.minus(money(e.amount)), money(0));
  const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
  expect(money(o.reserved).isZero()).toBe(true);
  // One settlement: the reservation, then one charge or one release (never both, never two).
  const kinds = entries.map((e) => e.kind).sort();
  return { g, history: money(detail.clientCost), debit, balanceDelta: balanceBefore.minus(money(o.balance)), kinds };
}

async function balanceOf(org: StackOrg): Promise<Decimal> {
  await s.settled(org.organizationId);
  return money((await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })).balance);
}

/** The four numbers agree (the event's JSON number is rounded to 6 places). */
function expectAgree(event: number | undefined, m: Awaited<ReturnType<typeof settled>>): void {
  expect(m.kinds).toEqual(m.history.isZero() ? ['release', 'reserve'] : ['charge', 'reserve']);
  expect(m.debit.equals(m.history)).toBe(true);
  expect(m.balanceDelta.equals(m.history)).toBe(true);
  if (event !== undefined) expect(event).toBeCloseTo(m.history.toNumber(), 6);
}

describe.each<Api>(['responses', 'chat'])('a %s stream that fails: event, history, ledger and balance agree', (api) => {
  it('provider error before the first delta: nothing charged anywhere', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs({ status: 500 });
    const st = await openStream(api, org);
    expect(st.deltas).toBe(0);
    const m = await settled(org, before);
    expect(m.g.status).toBe('failed');
    expect(m.history.isZero()).toBe(true);
    expectAgree(eventCost(api, st), m);
  });

  it('provider error after the first delta: charged for what was produced, the same number everywhere', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs({ failMidStream: true, text: 'one two three four five six seven eight nine ten', streamChunks: 10 });
    const st = await openStream(api, org);
    expect(st.deltas).toBeGreaterThan(0);
    const m = await settled(org, before);
    expect(m.g.status).toBe('failed');
    expect(m.history.greaterThan(0)).toBe(true);
    expectAgree(eventCost(api, st), m);
  });

  it('client disconnect after content: the provider call is aborted and what was produced is charged', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs({ streamChunks: 50, chunkDelayMs: 100, completionTokens: 5000 });
    const st = await openStream(api, org, { leaveAfter: 2 });
    expect(st.deltas).toBe(2);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('failed');
    expect(m.g.error).toMatchObject({ code: 'REQUEST_TIMEOUT', message: expect.stringContaining('client disconnected') });
    expect(m.history.greaterThan(0)).toBe(true);
    // Far less than the full answer (5000 completion tokens at 160 RUB per million = 0.8 RUB).
    expect(m.history.lessThan('0.05')).toBe(true);
    expectAgree(undefined, m); // the client left: it receives no final event
  });

  it('timeout after content (SYNC_WAIT_MS of silence): the provider call is aborted, the event shows the charge', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    // Held by the provider after its first delta, until the API's wait runs out and the call is aborted.
    s.fake.setKnobs({ streamChunks: 4, holdAfterChunks: 1, text: 'first second third fourth' });
    const st = await openStream(api, org);
    expect(st.deltas).toBe(1);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('failed');
    expect((m.g.error as { code: string }).code).toBe('REQUEST_TIMEOUT');
    expect(m.history.greaterThan(0)).toBe(true);
    expectAgree(eventCost(api, st), m);
  });

  it('timeout before any content: the provider call is aborted, nothing charged anywhere', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs({ holdReplies: true });
    const st = await openStream(api, org);
    expect(st.deltas).toBe(0);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('cancelled');
    expect(m.history.isZero()).toBe(true);
    expectAgree(eventCost(api, st), m);
  });
});

describe('a stream cancelled through the API (openai SDK): what reached the client is charged, once, the same number everywhere', () => {
  const sdk = (org: StackOrg) => new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
  const slow = { streamChunks: 50, chunkDelayMs: 100, completionTokens: 5000 };

  /**
   * Streams a response through the SDK; once `after` text deltas have arrived (0: at the first event), `cancel(id)`
   * runs (not awaited, as another client would). Returns every event, the deltas received and what `cancel` answered.
   */
  async function streamThenCancel<T>(org: StackOrg, after: number, cancel: (client: OpenAI, id: string) => Promise<T>, extra: { background?: boolean } = {}) {
    const client = sdk(org);
    const stream = await client.responses.create({ model: STACK_MODELS.chat, input: 'Tell me a story', stream: true, max_output_tokens: 400, ...extra });
    const events: ResponseStreamEvent[] = [];
    let deltas = 0;
    let cancelled: Promise<T> | undefined;
    for await (const ev of stream) {
      events.push(ev);
      if (ev.type === 'response.output_text.delta') deltas++;
      if (!cancelled && deltas >= after) cancelled = cancel(client, (events[0] as { response: { id: string } }).response.id);
    }
    return { events, deltasBefore: after, deltas, answer: await cancelled! };
  }

  /** The cost the final event of a cancelled response stream reports. */
  function finalCost(events: ResponseStreamEvent[]): number {
    const last = events.at(-1) as unknown as { type: string; response: { status: string; usage: { cost_rub: number } | null } };
    expect(last.type).toBe('response.failed');
    return last.response.usage?.cost_rub ?? 0;
  }

  it('responses stream, DELETE after some deltas: cancelled, charged for what was produced', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs(slow);
    const st = await streamThenCancel(org, 5, (c, id) => c.responses.delete(id));
    expect(st.deltas).toBeGreaterThanOrEqual(5);
    expect(st.deltas).toBeLessThan(50);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('cancelled');
    expect(m.history.greaterThan(0)).toBe(true);
    expect(m.history.lessThan('0.05')).toBe(true); // far less than the whole answer (5000 tokens: 0.8 RUB)
    expectAgree(finalCost(st.events), m);
    expect(m.g.request).toMatchObject({ deleted: true });
  });

  it('background + stream, POST cancel after some deltas: cancelled, charged, the cancel answers that cost too', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs(slow);
    const st = await streamThenCancel(org, 5, (c, id) => c.responses.cancel(id), { background: true });
    expect(st.deltas).toBeGreaterThanOrEqual(5);
    expect(st.deltas).toBeLessThan(50);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('cancelled');
    expect(m.history.greaterThan(0)).toBe(true);
    expectAgree(finalCost(st.events), m);
    expect(st.answer.status).toBe('cancelled');
    expect((st.answer.usage as unknown as { cost_rub: number }).cost_rub).toBeCloseTo(m.history.toNumber(), 6);
  });

  it('chat completions stream (no cancel route: the client leaving) after some deltas: charged for what was produced', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs(slow);
    const stream = await sdk(org).chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'Tell me a story' }], stream: true, max_tokens: 400, stream_options: { include_usage: true } });
    let deltas = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) deltas++;
      if (deltas >= 3) stream.controller.abort();
    }
    expect(deltas).toBe(3);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('failed');
    expect(m.history.greaterThan(0)).toBe(true);
    expectAgree(undefined, m); // the client left: it receives no final event
  });

  it('cancelled before any delta reached the client: nothing charged anywhere', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    // Held before its first delta until the cancel cuts the call.
    s.fake.setKnobs({ ...slow, holdReplies: true });
    const st = await streamThenCancel(org, 0, (c, id) => c.responses.delete(id));
    expect(st.deltas).toBe(0);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('cancelled');
    expect(m.history.isZero()).toBe(true);
    expectAgree(finalCost(st.events), m);
  });

  it('two cancels at once (DELETE and POST cancel): the worker settles once, both see the same cancelled response', async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs(slow);
    const st = await streamThenCancel(org, 3, (c, id) => Promise.all([c.responses.cancel(id), c.responses.delete(id)]), { background: true });
    const m = await settled(org, before);
    expect(m.g.status).toBe('cancelled');
    expect(m.history.greaterThan(0)).toBe(true);
    expectAgree(finalCost(st.events), m);
    expect((st.answer[0].usage as unknown as { cost_rub: number }).cost_rub).toBeCloseTo(m.history.toNumber(), 6);
  });

  it("the API's uncharged cancel committed first (a stream whose job started over): the worker's partial settlement after it changes nothing", async () => {
    const org = await s.seed({ balance: '10' });
    const before = await balanceOf(org);
    s.fake.setKnobs(slow);
    const st = await streamThenCancel(org, 3, (_c, id) => s.ctx.gateway.cancel(id, QUEUES.text));
    expect(st.answer).toBe(true);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('cancelled');
    expect(m.history.isZero()).toBe(true);
    expectAgree(finalCost(st.events), m);
  });
});
