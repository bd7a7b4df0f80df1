/**
 * A stream that does not end well shows, charges and records ONE number (decisions.md section 4): the cost in
 * the final event's `usage`, the history record's `clientCost`, the ledger's charge and the balance's change.
 * Content reached the client: charged for what was produced. Nothing reached it: nothing charged.
 * Real HTTP streams against the fake provider; responses and chat completions.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { money, type Decimal } from '../../shared/billing/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

const SYNC_WAIT_MS = 1200;
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
  const until = Date.now() + 10_000;
  for (;;) {
    const g = await s.t.db.generation.findFirst({ where: { organizationId: org.organizationId } });
    if (g && g.status !== 'pending' && g.status !== 'processing') break;
    if (Date.now() > until) throw new Error(`generation did not end: ${g?.status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await s.settled(org.organizationId);
  const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId } });
  const detail = await fetch(`${s.url}/v1/history/generations/${g.id}`, { headers: org.auth }).then((r) => r.json() as Promise<{ clientCost: string }>);
  const entries = await s.t.db.ledgerEntry.findMany({ where: { generationId: g.id } });
  const debit = entries.reduce((sum, e) => sum.minus(money(e.amount)), money(0));
  const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
  expect(money(o.reserved).isZero()).toBe(true);
  return { g, history: money(detail.clientCost), debit, balanceDelta: balanceBefore.minus(money(o.balance)) };
}

async function balanceOf(org: StackOrg): Promise<Decimal> {
  await s.settled(org.organizationId);
  return money((await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } })).balance);
}

/** The four numbers agree (the event's JSON number is rounded to 6 places). */
function expectAgree(event: number | undefined, m: Awaited<ReturnType<typeof settled>>): void {
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
    s.fake.setKnobs({ streamChunks: 4, chunkDelayMs: SYNC_WAIT_MS * 3, text: 'first second third fourth' });
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
    s.fake.setKnobs({ latencyMs: SYNC_WAIT_MS * 4 });
    const st = await openStream(api, org);
    expect(st.deltas).toBe(0);
    await s.fake.waitForAborted(1);
    const m = await settled(org, before);
    expect(m.g.status).toBe('cancelled');
    expect(m.history.isZero()).toBe(true);
    expectAgree(eventCost(api, st), m);
  });
});
