/**
 * Every generation kind runs the same attempt loop (workers/services/attempt-loop.ts): embeddings record their
 * failed attempts exactly as text does and map failures to the same errors, and the warnings a caller is given
 * are the warnings the generation keeps (history shows the same list).
 */
import request from 'supertest';
import { createTestStack, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '8000' },
    catalogOverrides: (url) => {
      const openai = { kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 5000 };
      const embed = (provider: string) => ({ provider, upstreamModel: 'text-embedding-3-small', price: { prompt: 2 }, supports: [] });
      const chat = (provider: string) => ({ provider, upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160 }, supports: [] });
      return {
        providers: { 'embed-a': openai, 'embed-b': openai, plain: openai },
        models: {
          'acme/embed-pair': { displayName: 'Embed pair', type: 'embedding', endpoints: [embed('embed-a'), embed('embed-b')] },
          'acme/plain': { displayName: 'Plain', type: 'chat', endpoints: [chat('plain')] },
        },
      };
    },
  });
  org = await s.seed();
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

const detail = (id: string) => request(s.app).get(`/v1/history/generations/${id}`).set(org.auth);
const embed = (input: string) => request(s.app).post('/v1/embeddings').set(org.auth).send({ model: 'acme/embed-pair', input });
const ask = (body: Record<string, unknown>) => request(s.app).post('/v1/responses').set(org.auth).send({ model: 'acme/plain', ...body });

describe('embeddings through the attempt loop', () => {
  it('a failed endpoint is recorded as an attempt, as text records it, and the next endpoint answers', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const res = await embed('vector');
    expect(res.status).toBe(200);
    const g = (await detail(res.body.id)).body;
    expect(g.attemptsCount).toBe(2);
    expect(g.routing.attempts).toEqual([{ provider: 'embed-a', endpoint: expect.any(String), reason: 'provider_error', status: 500, message: expect.any(String) }]);
    expect(g.routing.answeredBy).toBe(g.routing.attempts[0].endpoint.replace('embed-a', 'embed-b'));

    // The same failure on a text request is recorded with the same shape.
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const text = await ask({ input: 'hi' });
    expect(text.status).toBe(502); // one endpoint only: nothing to fall back to
    expect(text.body.error.metadata.attempts).toEqual([{ provider: 'plain', endpoint: expect.any(String), reason: 'provider_error', status: 500, message: expect.any(String) }]);
  });

  it('an unreadable reply from every endpoint is 502 all_providers_failed with malformed_reply attempts, as for text', async () => {
    s.fake.setKnobs({ malformed: true });
    const res = await embed('vector');
    expect(res.status).toBe(502);
    expect(res.body.error.metadata.reason).toBe('all_providers_failed');
    expect(res.body.error.metadata.attempts.map((a: { reason: string }) => a.reason)).toEqual(['malformed_reply', 'malformed_reply']);

    const text = await ask({ input: 'hi' });
    expect(text.status).toBe(502);
    expect(text.body.error.metadata.reason).toBe('all_providers_failed');
    expect(text.body.error.metadata.attempts.map((a: { reason: string }) => a.reason)).toEqual(['malformed_reply']);
  });
});

describe('warnings: one list from the request to the history', () => {
  it("the history record's warnings are the response's: the request's, and the parameter the endpoint ignored", async () => {
    const res = await ask({ input: 'hi', tools: [{ type: 'web_search' }], temperature: 0.3 });
    expect(res.status).toBe(200);
    expect(res.body.switchyard.warnings).toEqual([
      "tool type 'web_search' is not supported and was ignored",
      expect.stringMatching(/^Parameter 'temperature' is not supported by acme\/plain via plain and was ignored$/),
    ]);
    const g = (await detail(res.body.id)).body;
    expect(g.warnings).toEqual(res.body.switchyard.warnings);
    // The stored response object shows them too.
    expect((await request(s.app).get(`/v1/responses/${res.body.id}`).set(org.auth)).body.switchyard.warnings).toEqual(res.body.switchyard.warnings);
  });

  it('a chat completion: the same', async () => {
    const res = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .send({ model: 'acme/plain', messages: [{ role: 'user', content: 'hi' }], temperature: 0.3, seed: 1 });
    expect(res.status).toBe(200);
    expect(res.body.switchyard.warnings).toHaveLength(2);
    expect((await detail(res.body.id)).body.warnings).toEqual(res.body.switchyard.warnings);
  });
});
