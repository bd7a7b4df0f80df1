/**
 * Input the chosen provider cannot take is the caller's problem: a `file_url` part to a provider that only
 * accepts inline files is 400 (not 502 all_providers_failed), uncharged, and nothing reaches the provider; a
 * model with another endpoint that can take it falls back there.
 */
import request from 'supertest';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type TestStack } from '../helpers/test-stack';

let s: TestStack;
beforeAll(async () => {
  s = await createTestStack({
    catalogOverrides: (url) => ({
      providers: { claude: { kind: 'anthropic', baseUrl: `${url}/anthropic/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 5000 } },
      models: {
        'acme/files': {
          displayName: 'Files',
          type: 'chat',
          endpoints: [
            { provider: 'openai', upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160 }, supports: [] },
            { provider: 'claude', upstreamModel: 'claude-sonnet-4', price: { prompt: 300, completion: 1500 }, supports: [] },
          ],
        },
      },
    }),
  });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

const withFileUrl = (model: string, stream = false) => ({
  model,
  stream,
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'Summarise this' }, { type: 'input_file', file_url: 'https://example.com/report.pdf' }] }],
});

it('a file_url part the only provider cannot take: 400 naming the problem, nothing sent, nothing charged', async () => {
  const org = await s.seed({ balance: '10' });
  const res = await request(s.app).post('/v1/responses').set(org.auth).send(withFileUrl(STACK_MODELS.chat));
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('BAD_REQUEST');
  expect(res.body.error.metadata.reason).toBe('validation_failed');
  expect(res.body.error.message).toContain('file_url');
  expect(s.fake.requests).toHaveLength(0);
  const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
  expect(money(o.balance).equals('10')).toBe(true);
  expect(money(o.reserved).isZero()).toBe(true);
});

it('streamed, the same refusal ends the stream with response.failed carrying BAD_REQUEST', async () => {
  const org = await s.seed({ balance: '10' });
  const res = await request(s.app).post('/v1/responses').set(org.auth).send(withFileUrl(STACK_MODELS.chat, true)).buffer(true).parse((r, cb) => {
    let data = '';
    r.on('data', (c: Buffer) => (data += c.toString()));
    r.on('end', () => cb(null, data));
  });
  const failed = (res.body as string).split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6))).at(-1);
  expect(failed.type).toBe('response.failed');
  expect(failed.response.error.code).toBe('BAD_REQUEST');
  expect(s.fake.requests).toHaveLength(0);
});

it('a model with an endpoint that takes file_url falls back to it', async () => {
  const org = await s.seed({ balance: '10' });
  const res = await request(s.app).post('/v1/responses').set(org.auth).send(withFileUrl('acme/files'));
  expect(res.status).toBe(200);
  expect(s.fake.requests.map((r) => r.path)).toEqual(['/anthropic/v1/messages']);
});
