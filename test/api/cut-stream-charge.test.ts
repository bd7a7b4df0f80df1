/**
 * What a stream cut before its provider's usage is charged (decisions.md section 4): what the provider produced, as
 * the provider reported it so far (Anthropic's and Gemini's input at the stream's start), else an honest count of what
 * was sent and delivered (shared/billing/token-count.ts); never the reservation's padded estimate, never more than the
 * same stream left to finish. Real HTTP streams against the fake provider (which counts 4 characters a token).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { money, type Decimal } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

let s: TestStack;
beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '10000' } });
});
afterAll(() => s.close());
afterEach(() => s.fake.setKnobs({}));

/** A /v1/responses stream over a real socket: the id, and its deltas; with `leaveAfter`, the client hangs up after that many. */
function stream(org: StackOrg, body: object, leaveAfter?: number): Promise<{ id: string; deltas: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${s.url}/v1/responses`, { method: 'POST', headers: { ...org.auth, 'content-type': 'application/json' } }, (res: IncomingMessage) => {
      let id = '';
      let deltas = 0;
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
          const data = buffer.slice(0, at).split('\n').find((l) => l.startsWith('data: '))?.slice(6);
          buffer = buffer.slice(at + 2);
          if (!data) continue;
          const ev = JSON.parse(data) as { type: string; response?: { id: string } };
          id ||= ev.response?.id ?? '';
          if (ev.type === 'response.output_text.delta' && ++deltas === leaveAfter) {
            req.destroy();
            resolve({ id, deltas });
          }
        }
      });
      res.on('end', () => resolve({ id, deltas }));
      res.on('error', () => resolve({ id, deltas }));
    });
    req.on('error', (e) => (leaveAfter === undefined ? reject(e) : undefined));
    req.end(JSON.stringify({ ...body, stream: true }));
  });
}

/** The generation once it has ended: its status, recorded usage and charge. */
async function ended(org: StackOrg, id: string): Promise<{ status: string; cost: Decimal; inputTokens: number; outputTokens: number }> {
  const g = await waitUntil(async () => {
    const row = await s.t.db.generation.findFirst({ where: { id } });
    return row && row.status !== 'pending' && row.status !== 'processing' ? row : undefined;
  });
  await s.settled(org.organizationId);
  const usage = g.usage as { inputTokens: number; outputTokens: number };
  const charged = await s.t.db.ledgerEntry.findMany({ where: { generationId: id, kind: 'charge' } });
  expect(charged).toHaveLength(1);
  expect(money(charged[0]!.amount).negated().equals(money(g.clientCost))).toBe(true);
  return { status: g.status, cost: money(g.clientCost), inputTokens: usage.inputTokens, outputTokens: usage.outputTokens };
}

// A 45,000-character prompt and a short answer in 10 deltas: the provider counts 11,250 prompt tokens.
const PROMPT = 'All work and no play makes Jack a dull boy. '.repeat(1023).slice(0, 45_000);
const ANSWER = 'Forty-two, the answer to the ultimate question of life, the universe and everything, said the computer.';

it('a stream cut after one delta costs less than the same stream left to finish; its prompt is counted honestly, not at 3 characters a token', async () => {
  const org = await s.seed({ balance: '100' });
  s.fake.setKnobs({ text: ANSWER, streamChunks: 10, chunkDelayMs: 100 });
  const body = { model: STACK_MODELS.chat, input: PROMPT, max_output_tokens: 400 };

  const whole = await stream(org, body);
  expect(whole.deltas).toBe(10);
  const finished = await ended(org, whole.id);
  expect(finished.status).toBe('completed');
  expect(finished.inputTokens).toBe(11_250); // the provider's own count

  const left = await stream(org, body, 1);
  const cut = await ended(org, left.id);
  expect(cut.status).toBe('failed');
  expect(cut.cost.greaterThan(0)).toBe(true);
  expect(cut.cost.lessThan(finished.cost)).toBe(true);
  // Counted, at most what the provider counts and within 10 % of it (the reservation's estimate said 15,000).
  expect(cut.inputTokens).toBeLessThanOrEqual(finished.inputTokens);
  expect(cut.inputTokens).toBeGreaterThan(finished.inputTokens * 0.9);
  expect(cut.outputTokens).toBeLessThan(finished.outputTokens);
});

it.each([
  ['Anthropic (message_start)', STACK_MODELS.chatAnthropic],
  ['Gemini (every chunk)', STACK_MODELS.chatGemini],
])('a stream cut after one delta whose provider reported the input at the start is charged that input: %s', async (_name, model) => {
  const org = await s.seed({ balance: '100' });
  s.fake.setKnobs({ text: ANSWER, streamChunks: 10, chunkDelayMs: 100, promptTokens: 777 });
  const left = await stream(org, { model, input: 'Tell me the answer', max_output_tokens: 400 }, 1);
  const cut = await ended(org, left.id);
  expect(cut.status).toBe('failed');
  expect(cut.inputTokens).toBe(777);
  expect(cut.outputTokens).toBeGreaterThan(0);
  expect(cut.outputTokens).toBeLessThan(Math.ceil(ANSWER.length / 4));
});
