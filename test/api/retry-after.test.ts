/**
 * An upstream `Retry-After` is honoured: the only endpoint that says "come back in 1 s" is asked again after
 * that second; one that says "30 s" is not called again before then, and the caller gets 429 with that
 * `Retry-After`; with a second endpoint, the rate-limited one is tried last while its wait lasts.
 */
import request from 'supertest';
import { createTestStack, type TestStack } from '../helpers/test-stack';

let s: TestStack;
const chat = (provider: string) => ({ provider, upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160 }, supports: [] });

beforeAll(async () => {
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '8000' },
    catalogOverrides: (url) => {
      const openai = { kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 5000 };
      const anthropic = { kind: 'anthropic', baseUrl: `${url}/anthropic/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 5000 };
      return {
        providers: { short: openai, long: openai, first: openai, second: anthropic, embed: openai },
        models: {
          'acme/short': { displayName: 'Short', type: 'chat', endpoints: [chat('short')] },
          'acme/long': { displayName: 'Long', type: 'chat', endpoints: [chat('long')] },
          'acme/pair': { displayName: 'Pair', type: 'chat', endpoints: [chat('first'), { ...chat('second'), upstreamModel: 'claude-sonnet-4' }] },
          'acme/embed': { displayName: 'Embed', type: 'embedding', endpoints: [{ provider: 'embed', upstreamModel: 'text-embedding-3-small', price: { prompt: 2 }, supports: [] }] },
        },
      };
    },
  });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

const ask = (org: { auth: Record<string, string> }, model: string) => request(s.app).post('/v1/responses').set(org.auth).send({ model, input: 'hello' });

it('the only endpoint answers 429 with Retry-After: 1: asked again after that second, and the reply is 200', async () => {
  const org = await s.seed();
  s.fake.setKnobs({ status: 429, failTimes: 1, retryAfterSeconds: 1 });
  const res = await ask(org, 'acme/short');
  expect(res.status).toBe(200);
  expect(s.fake.requests).toHaveLength(2);
  // The second call came after the moment the 429 asked to be left alone until (its endpoint's sample records it).
  await s.workerDeps.stats.flush();
  const [key] = await s.ctx.redis.keys(`${s.ctx.config.queuePrefix}:stats:acme/short:*`);
  const samples = (await s.ctx.redis.lrange(key!, 0, -1)).map((t) => JSON.parse(t) as { a: number; r?: number });
  const until = samples.find((x) => x.r !== undefined)!;
  expect(until.r! - until.a).toBe(1000);
  expect(s.fake.requests[1]!.startedAt!).toBeGreaterThanOrEqual(until.r!);
});

it('Retry-After: 30 on the only endpoint: 429 carrying Retry-After, and the endpoint is not called again meanwhile', async () => {
  const org = await s.seed();
  s.fake.setKnobs({ status: 429, retryAfterSeconds: 30 });
  const first = await ask(org, 'acme/long');
  expect(first.status).toBe(429);
  expect(first.body.error).toMatchObject({ code: 'TOO_MANY_REQUESTS', type: 'rate_limit_error' });
  expect(first.body.error.metadata.reason).toBe('all_providers_failed');
  expect(first.body.error.message).toContain('retry after 30 s');
  expect(first.body.error.metadata.retry_after_seconds).toBe(30);
  expect(first.headers['retry-after']).toBe('30');
  expect(s.fake.requests).toHaveLength(1);

  // What is left of those 30 s when the second answer was made, from the moment the first 429 set (its sample).
  await s.workerDeps.stats.flush();
  const [key] = await s.ctx.redis.keys(`${s.ctx.config.queuePrefix}:stats:acme/long:*`);
  const until = (await s.ctx.redis.lrange(key!, 0, -1)).map((t) => JSON.parse(t) as { r?: number }).find((x) => x.r !== undefined)!.r!;
  const asked = Date.now();
  const second = await ask(org, 'acme/long');
  const answered = Date.now();
  expect(second.status).toBe(429);
  expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(Math.ceil((until - answered) / 1000));
  expect(Number(second.headers['retry-after'])).toBeLessThanOrEqual(Math.ceil((until - asked) / 1000));
  expect(second.body.error.metadata.attempts[0].message).toContain('Retry-After');
  expect(s.fake.requests).toHaveLength(1); // not called again
});

it('with two endpoints, a rate-limited one is tried after the other while its Retry-After lasts', async () => {
  const org = await s.seed();
  s.fake.setKnobs({ status: 429, failTimes: 1, retryAfterSeconds: 30 });
  const first = await ask(org, 'acme/pair');
  expect(first.status).toBe(200);
  expect(s.fake.requests.map((r) => r.path)).toEqual(['/openai/v1/chat/completions', '/anthropic/v1/messages']);
  s.fake.reset();
  const second = await ask(org, 'acme/pair');
  expect(second.status).toBe(200);
  expect(s.fake.requests.map((r) => r.path)).toEqual(['/anthropic/v1/messages']);
});

it('embeddings honour it too: the only endpoint is asked again after a short Retry-After', async () => {
  const org = await s.seed();
  s.fake.setKnobs({ status: 503, failTimes: 1, retryAfterSeconds: 1 });
  const res = await request(s.app).post('/v1/embeddings').set(org.auth).send({ model: 'acme/embed', input: 'vector' });
  expect(res.status).toBe(200);
  expect(s.fake.requests).toHaveLength(2);
});
