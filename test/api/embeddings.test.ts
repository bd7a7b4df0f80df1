/**
 * POST /v1/embeddings with multimodal blocks (interface.md: only models marked multimodal accept images; one
 * embedding model accepts text plus images): through the route, the queue, the worker and the fake provider.
 */
import request from 'supertest';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '4000' } });
  org = await s.seed({ balance: '100' });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

const embed = (body: object) => request(s.app).post('/v1/embeddings').set(org.auth).send(body);
const PIXEL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const sentTo = (path: string) => s.fake.requests.filter((r) => r.path.endsWith(path));

describe('multimodal embeddings', () => {
  it('embeds text plus an image on the multimodal model, one vector per block, the image sent inline', async () => {
    const res = await embed({
      model: STACK_MODELS.embeddingMultimodal,
      input: [{ content: [{ type: 'text', text: 'a red pixel' }, { type: 'image_url', image_url: { url: PIXEL } }] }, { content: [{ type: 'text', text: 'words only' }] }],
      dimensions: 16,
    });
    expect(res.status).toBe(200);
    expect(res.body.data.map((d: { index: number; embedding: number[] }) => [d.index, d.embedding.length])).toEqual([
      [0, 16],
      [1, 16],
    ]);
    expect(res.body.model).toBe(STACK_MODELS.embeddingMultimodal);
    expect(res.body.usage.cost_rub).toBeGreaterThan(0);
    const [call] = sentTo('/models/gemini-embedding-2:batchEmbedContents');
    expect((call!.body as { requests: Array<{ content: { parts: unknown[] } }> }).requests[0]!.content.parts).toEqual([
      { text: 'a red pixel' },
      { inlineData: { mimeType: 'image/png', data: PIXEL.slice('data:image/png;base64,'.length) } },
    ]);
  });

  it('refuses an image on a text model with 400 parameters_unsupported before anything is reserved or sent', async () => {
    const res = await embed({ model: STACK_MODELS.embedding, input: [{ content: [{ type: 'image_url', image_url: { url: PIXEL } }] }] });
    expect(res.status).toBe(400);
    expect(res.body.error.metadata.reason).toBe('parameters_unsupported');
    expect(s.fake.requests).toHaveLength(0);
  });

  it('takes a block of text parts only on a text model, as its text', async () => {
    const res = await embed({ model: STACK_MODELS.embedding, input: [{ content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'second' }] }] });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(sentTo('/openai/v1/embeddings').at(-1)!.body).toMatchObject({ input: ['first\nsecond'] });
  });
});
