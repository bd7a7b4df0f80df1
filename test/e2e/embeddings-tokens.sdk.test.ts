import OpenAI from 'openai';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

// Embeddings input as token ids (issue 9.6): one array of integers, or an array of arrays, as OpenAI takes it.
let s: TestStack;
let org: StackOrg;
let client: OpenAI;

const GEMINI_EMBEDDING = 'google/text-embedding-004';
const MIXED_EMBEDDING = 'acme/embed-mixed';

beforeAll(async () => {
  s = await createTestStack({
    catalogOverrides: {
      models: {
        [GEMINI_EMBEDDING]: { displayName: 'Gemini embedding', type: 'embedding', endpoints: [{ provider: 'gemini', upstreamModel: 'text-embedding-004', price: { prompt: 1 }, supports: [] }] },
        // The cheaper Gemini endpoint comes first: token arrays must skip it.
        [MIXED_EMBEDDING]: {
          displayName: 'Mixed embedding',
          type: 'embedding',
          endpoints: [
            { provider: 'gemini', upstreamModel: 'text-embedding-004', price: { prompt: 1 }, supports: [] },
            { provider: 'openai', upstreamModel: 'text-embedding-3-small', price: { prompt: 2 }, supports: [] },
          ],
        },
      },
    },
  });
  org = await s.seed({ balance: '100' });
  client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

async function balance() {
  await s.settled(org.organizationId);
  const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
  return money(o.balance);
}

describe('embeddings from token ids with the openai SDK', () => {
  it('sends one token array upstream as token ids and bills the token count', async () => {
    const before = await balance();
    const r = await client.embeddings.create({ model: STACK_MODELS.embedding, input: [9906, 1917, 0] });
    expect(r.data).toHaveLength(1);
    expect(r.data[0].embedding.length).toBeGreaterThan(0);
    const upstream = s.fake.requests.find((q) => q.path.endsWith('/embeddings'));
    expect(upstream?.body).toMatchObject({ input: [[9906, 1917, 0]], model: 'text-embedding-3-small' });
    // 3 tokens at 2 RUB per million.
    expect(r.usage.prompt_tokens).toBe(3);
    const spent = before.minus(await balance());
    expect(spent.toNumber()).toBeCloseTo((3 * 2) / 1_000_000, 12);
  });

  it('answers one vector per token array, in order, in float and base64', async () => {
    const input = [[1, 2, 3], [4, 5], [6]];
    const floats = await client.embeddings.create({ model: STACK_MODELS.embedding, input, encoding_format: 'float' });
    expect(floats.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(floats.usage.prompt_tokens).toBe(6);
    const viaBase64 = await client.embeddings.create({ model: STACK_MODELS.embedding, input });
    viaBase64.data.forEach((d, i) => d.embedding.forEach((v, j) => expect(v).toBeCloseTo(floats.data[i].embedding[j], 6)));
  });

  it('routes token arrays past providers that cannot take them', async () => {
    const r = await client.embeddings.create({ model: MIXED_EMBEDDING, input: [[1, 2]] });
    expect(r.data).toHaveLength(1);
    expect(s.fake.requests.some((q) => q.path.includes('gemini'))).toBe(false);
  });

  it('answers 400 parameters_unsupported when no endpoint takes token arrays, and 400 naming the path for bad ids', async () => {
    const err = await client.embeddings.create({ model: GEMINI_EMBEDDING, input: [[1, 2]] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const body = (err as InstanceType<typeof OpenAI.APIError>).error as { code: string; metadata: { reason: string }; message: string };
    expect(body.metadata.reason).toBe('parameters_unsupported');
    expect(body.message).toMatch(/token arrays/);

    for (const [input, path] of [
      [[1, -1], '/input/1'],
      [[[1], []], '/input/1'],
      [[[1], 'text'], '/input/1'],
      [[1.5], '/input/0'],
    ] as const) {
      const bad = await client.embeddings.create({ model: STACK_MODELS.embedding, input: input as unknown as number[] }).catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
      const details = ((bad as InstanceType<typeof OpenAI.APIError>).error as { details: { errors: Array<{ path: string }> } }).details;
      expect(details.errors.map((e) => e.path)).toContain(path);
    }
    expect(s.fake.requests.filter((q) => q.path.endsWith('/embeddings'))).toHaveLength(0);
  });
});
