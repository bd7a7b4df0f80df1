/**
 * The reference's examples against the real service: each operation whose reply has no response schema (text
 * generation, embeddings, typed questions, models, images, media) is called with its own request example on a
 * stack serving the demo catalog, and the example reply must have the real reply's shape — the same fields at the
 * top level and in the first element of each list. A changed reply then fails here until its example follows.
 * `DUMP_EXAMPLES=/tmp/replies.jsonl npx jest test/api/openapi-examples-live.test.ts` writes the real replies instead,
 * to update api/openapi/*-examples.ts from.
 */
import fs from 'node:fs';
import request from 'supertest';
import { createTestStack, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';
import { EXAMPLES } from '../../api/openapi/build-openapi';
import demoCatalog from '../../config/catalog.demo.json';

let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  // The demo catalog (the examples name its models), its providers pointed at the stack's fake.
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '10000' },
    catalogOverrides: (fakeUrl) => ({
      providers: Object.fromEntries(
        Object.entries(demoCatalog.providers).map(([name, p]) => [name, { ...p, baseUrl: p.baseUrl.replace('http://127.0.0.1:4010', fakeUrl), apiKeyEnv: 'FAKE_PROVIDER_KEY' }]),
      ),
      models: demoCatalog.models as never,
    }),
  });
  org = await s.seed({ balance: '1000' });
}, 60_000);
afterAll(() => s.close());

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Field names at the top level, and in the first element of each list of objects (`data[0]`, `output[0]`...). */
function shape(x: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!isObject(x)) return out;
  out['.'] = Object.keys(x).sort();
  for (const [k, v] of Object.entries(x)) {
    if (Array.isArray(v) && isObject(v[0])) out[`${k}[0]`] = Object.keys(v[0]).sort();
    else if (isObject(v) && k === 'answers') for (const [q, a] of Object.entries(v)) out[`answers.${q}`] = Object.keys(a as Json).sort();
    else if (isObject(v)) out[k] = Object.keys(v).sort();
  }
  return out;
}

function expectShape(route: string, real: unknown) {
  if (process.env.DUMP_EXAMPLES) return void fs.appendFileSync(process.env.DUMP_EXAMPLES, `${JSON.stringify({ route, real })}\n`);
  expect({ route, shape: shape(EXAMPLES[route].response) }).toEqual({ route, shape: shape(real) });
}

const call = (method: 'get' | 'post' | 'delete', path: string, body?: unknown) => {
  const r = request(s.app)[method](path).set(org.auth);
  return body === undefined ? r : r.send(body as object);
};

describe('response examples have the real replies\' shape', () => {
  it('text: responses (and reading one back), chat completions', async () => {
    const created = await call('post', '/v1/responses', EXAMPLES['POST /v1/responses'].request);
    expect(created.status).toBe(200);
    expectShape('POST /v1/responses', created.body);
    const read = await call('get', `/v1/responses/${created.body.id}`);
    expect(read.status).toBe(200);
    expectShape('GET /v1/responses/{id}', read.body);
    const items = await call('get', `/v1/responses/${created.body.id}/input_items?order=asc`);
    expect(items.status).toBe(200);
    expectShape('GET /v1/responses/{id}/input_items', items.body);
    const gone = await call('delete', `/v1/responses/${created.body.id}`);
    expect(gone.status).toBe(200);
    expectShape('DELETE /v1/responses/{id}', gone.body);
    s.fake.setKnobs({ holdReplies: true });
    const queued = await call('post', '/v1/responses', { ...(EXAMPLES['POST /v1/responses'].request as object), background: true });
    const cancelled = await call('post', `/v1/responses/${queued.body.id}/cancel`);
    s.fake.setKnobs({});
    expect(cancelled.status).toBe(200);
    expectShape('POST /v1/responses/{id}/cancel', cancelled.body);
    const chat = await call('post', '/v1/chat/completions', EXAMPLES['POST /v1/chat/completions'].request);
    expect(chat.status).toBe(200);
    expectShape('POST /v1/chat/completions', chat.body);
  });

  it('embeddings, typed questions, models', async () => {
    const emb = await call('post', '/v1/embeddings', EXAMPLES['POST /v1/embeddings'].request);
    expect(emb.status).toBe(200);
    expectShape('POST /v1/embeddings', emb.body);
    // Typed questions read the top log-probabilities of one token per question (Y/N, A/B/C, 1/2/3): the fake
    // providers as demo mode starts them (no knobs) send them when asked, so the /docs example answers there too.
    const sys = await call('post', '/v1/systemone', EXAMPLES['POST /v1/systemone'].request);
    expect({ status: sys.status, body: sys.status === 200 ? null : sys.body }).toEqual({ status: 200, body: null });
    expectShape('POST /v1/systemone', sys.body);
    const list = await call('get', '/v1/models');
    expect(list.status).toBe(200);
    expectShape('GET /v1/models', list.body);
    const one = await call('get', '/v1/models/openai/gpt-4.1-mini');
    expect(one.status).toBe(200);
    expectShape('GET /v1/models/{id}', one.body);
  });

  it('images and media', async () => {
    for (const route of ['POST /v1/images/generations', 'POST /v2/images/generations']) {
      const img = await call('post', route.split(' ')[1], EXAMPLES[route].request);
      expect({ route, status: img.status }).toEqual({ route, status: 200 });
      expectShape(route, img.body);
    }
    const created = await call('post', '/v1/media', EXAMPLES['POST /v1/media'].request);
    expect(created.status).toBe(202);
    expectShape('POST /v1/media', created.body);
    const done = await waitUntil(async () => {
      const body = (await call('get', `/v1/media/${created.body.id}`)).body;
      return body.status === 'completed' ? body : undefined;
    }, 20_000, 100);
    expectShape('GET /v1/media/{id}', done);
    expectShape('GET /v2/media/{id}', (await call('get', `/v2/media/${created.body.id}`)).body);
  }, 60_000);
});
