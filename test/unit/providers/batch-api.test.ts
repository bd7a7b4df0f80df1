/** Each adapter's `batch` operation, performed by the upstream client against the fake provider's batch APIs. */
import { startFakeProvider, type FakeProvider } from '../../../fakes/fake-provider';
import { newId } from '../../../shared/ids';
import type { BatchApiOperation, ProviderAdapter, UpstreamBatch, UpstreamBatchLine, UpstreamBatchResult } from '../../../shared/providers/adapter.types';
import { anthropicAdapter } from '../../../shared/providers/anthropic';
import { createUpstreamClient, type UpstreamClient } from '../../../shared/providers/api';
import { openaiAdapter } from '../../../shared/providers/openai';
import type { EmbeddingRequest, TextRequest } from '../../../shared/providers/provider.types';
import { UpstreamError } from '../../../shared/providers/upstream-error';
import { waitUntil } from '../../helpers/until';

const KEY = 'sk-test';
let fake: FakeProvider;
let client: UpstreamClient;
beforeAll(async () => {
  fake = await startFakeProvider();
  client = createUpstreamClient();
});
afterAll(async () => {
  await client.close();
  await fake.close();
});
beforeEach(() => fake.reset());

interface Kind {
  adapter: ProviderAdapter;
  op: BatchApiOperation;
  base: () => string;
}
const OPENAI: Kind = { adapter: openaiAdapter, op: openaiAdapter.batch!, base: () => `${fake.url}/openai/v1` };
const ANTHROPIC: Kind = { adapter: anthropicAdapter, op: anthropicAdapter.batch!, base: () => `${fake.url}/anthropic/v1` };

const call = (k: Kind) => ({ timeoutMs: 5000, extractError: k.adapter.extractError });
const textReq = (text: string, model = 'gpt-4o'): TextRequest => ({ model, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }], stream: false, maxOutputTokens: 100 });
const textLines = (k: Kind, texts: string[], model?: string): UpstreamBatchLine[] => texts.map((t) => ({ customId: newId('gen'), request: k.adapter.text!.buildRequest(textReq(t, model), KEY) }));

async function create(k: Kind, lines: UpstreamBatchLine[]): Promise<UpstreamBatch> {
  const fileId = k.op.buildUpload ? k.op.parseUpload!((await client.request(k.base(), k.op.buildUpload(lines, KEY), call(k))).json) : undefined;
  return k.op.parseBatch((await client.request(k.base(), k.op.buildCreate({ lines, ...(fileId && { fileId }) }, KEY), call(k))).json, KEY);
}
async function settle(k: Kind, id: string): Promise<UpstreamBatch> {
  return waitUntil(async () => {
    const batch = k.op.parseBatch((await client.request(k.base(), k.op.buildGet(id, KEY), call(k))).json, KEY);
    return batch.status !== 'running' ? batch : undefined;
  }, 20_000, 10);
}
async function results(k: Kind, batch: UpstreamBatch): Promise<Map<string, UpstreamBatchResult>> {
  const out = new Map<string, UpstreamBatchResult>();
  for (const spec of batch.results) {
    const reply = await client.request(k.base(), spec, call(k));
    expect(reply.json).toBeUndefined();
    for (const line of reply.text.split('\n')) {
      if (line.trim() === '') continue;
      const result = k.op.parseResultLine(line);
      expect(out.has(result.customId)).toBe(false);
      out.set(result.customId, result);
    }
  }
  return out;
}
const okBody = (r: UpstreamBatchResult | undefined): unknown => {
  if (!r?.ok) throw new Error(`expected an ok result, got ${JSON.stringify(r)}`);
  return r.body;
};

describe.each([
  ['OpenAI', OPENAI, 'gpt-4o'],
  ['Anthropic', ANTHROPIC, 'claude-sonnet-4-5'],
])('%s batch operation against the fake', (_name, k, model) => {
  it('creates, polls until ended, and reads results whose bodies parse as the synchronous call’s; a failing line is a retryable failure', async () => {
    fake.setKnobs({ batchLineErrors: { '[boom]': 500, '[bad]': 400 } });
    const lines = textLines(k, ['hello there', 'please [boom]', 'second one', 'x [bad]'], model);
    const created = await create(k, lines);
    expect(created).toMatchObject({ status: 'running', results: [] });
    const ended = await settle(k, created.id);
    expect(ended.status).toBe('ended');
    const out = await results(k, ended);
    expect([...out.keys()].sort()).toEqual(lines.map((l) => l.customId).sort());
    const first = k.adapter.text!.parseResponse(okBody(out.get(lines[0].customId)));
    const direct = k.adapter.text!.parseResponse((await client.request(k.base(), lines[0].request, call(k))).json);
    expect(first.output).toEqual(direct.output.map((item) => ({ ...item, id: expect.any(String) })));
    expect(first.usage).toEqual(direct.usage);
    expect(first.output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text: 'Echo: hello there' }] });
    expect(k.adapter.text!.parseResponse(okBody(out.get(lines[2].customId))).finishReason).toBe('stop');
    expect(out.get(lines[1].customId)).toMatchObject({ ok: false, status: 500, retryable: true });
    expect(out.get(lines[3].customId)).toMatchObject({ ok: false, status: 400, retryable: false });
    expect(fake.batchStats).toMatchObject({ created: 1, linesRun: 4, cancels: 0 });
  });

  it('cancels: the lines that ran have their results, the others none or a retryable failure', async () => {
    fake.setKnobs({ batchMs: 2000 });
    const lines = textLines(k, Array.from({ length: 10 }, (_, i) => `line ${i}`), model);
    const created = await create(k, lines);
    // Cancelled once a line has run (one every 160 ms; a read advances the batch): some ran, the rest never will.
    await waitUntil(async () => ((await client.request(k.base(), k.op.buildGet(created.id, KEY), call(k)), fake.batchStats.linesRun) ? true : undefined), 10_000, 10);
    const cancelling = k.op.parseBatch((await client.request(k.base(), k.op.buildCancel(created.id, KEY), call(k))).json, KEY);
    expect(cancelling.status).toBe('running');
    const out = await results(k, await settle(k, created.id));
    const ok = [...out.values()].filter((r) => r.ok);
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length).toBeLessThan(10);
    for (const r of ok) k.adapter.text!.parseResponse(okBody(r));
    for (const r of out.values()) if (!r.ok) expect(r).toMatchObject({ retryable: true });
    expect(fake.batchStats).toMatchObject({ cancels: 1, linesRun: ok.length });
  });

  it('expires: lines not run are retryable failures', async () => {
    fake.setKnobs({ batchExpireAfterLines: 1 });
    const lines = textLines(k, ['a', 'b', 'c'], model);
    const out = await results(k, await settle(k, (await create(k, lines)).id));
    expect(out.get(lines[0].customId)?.ok).toBe(true);
    expect([out.get(lines[1].customId), out.get(lines[2].customId)]).toEqual([
      expect.objectContaining({ ok: false, retryable: true }),
      expect.objectContaining({ ok: false, retryable: true }),
    ]);
  });
});

describe('whole-batch failures', () => {
  it('OpenAI: a batch that fails validation is failed with the provider’s message, no results', async () => {
    fake.setKnobs({ batchFail: true });
    const failed = await settle(OPENAI, (await create(OPENAI, textLines(OPENAI, ['x']))).id);
    expect(failed).toMatchObject({ status: 'failed', results: [], error: expect.stringContaining('Enqueued token limit reached') });
  });

  it('Anthropic: a refused create is a bad_request UpstreamError', async () => {
    fake.setKnobs({ batchFail: true });
    await expect(create(ANTHROPIC, textLines(ANTHROPIC, ['x'], 'claude-sonnet-4-5'))).rejects.toMatchObject({ failure: { reason: 'bad_request', status: 400 } });
    await expect(create(ANTHROPIC, textLines(ANTHROPIC, ['x'], 'claude-sonnet-4-5'))).rejects.toBeInstanceOf(UpstreamError);
  });
});

describe('OpenAI embeddings batch', () => {
  it('answers embeddings lines whose bodies parse with embeddings.parseResponse', async () => {
    const req: EmbeddingRequest = { model: 'text-embedding-3-small', inputs: [{ type: 'text', text: 'alpha' }, { type: 'text', text: 'beta' }], dimensions: 4 };
    const lines: UpstreamBatchLine[] = [{ customId: newId('gen'), request: openaiAdapter.embeddings!.buildRequest(req, KEY) }];
    const out = await results(OPENAI, await settle(OPENAI, (await create(OPENAI, lines)).id));
    const parsed = openaiAdapter.embeddings!.parseResponse(okBody(out.get(lines[0].customId)), req);
    const direct = openaiAdapter.embeddings!.parseResponse((await client.request(OPENAI.base(), lines[0].request, call(OPENAI))).json, req);
    expect(parsed).toEqual(direct);
    expect(parsed.vectors).toHaveLength(2);
    expect(parsed.vectors[0]).toHaveLength(4);
  });
});
