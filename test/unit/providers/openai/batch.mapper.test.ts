import { openaiAdapter } from '../../../../shared/providers/openai';
import { buildEmbeddingRequest, buildChatCompletionRequest, buildResponsesRequest } from '../../../../shared/providers/openai/request.mapper';
import type { UpstreamBatchLine } from '../../../../shared/providers/adapter.types';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

const batch = openaiAdapter.batch!;
const chat = (customId: string, text: string): UpstreamBatchLine => ({
  customId,
  request: buildChatCompletionRequest({ model: 'gpt-4o', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }], stream: false }, 'sk'),
});

describe('OpenAI batch mapper', () => {
  it('uploads the lines as JSONL ({custom_id, method, url: /v1 + path, body}) in a multipart purpose=batch form', () => {
    const lines = [chat('gen_a', 'hi'), chat('gen_b', 'there')];
    const upload = batch.buildUpload!(lines, 'sk');
    expect(upload).toMatchObject({ method: 'POST', path: '/files', headers: { authorization: 'Bearer sk' }, multipart: { fields: { purpose: 'batch' }, file: { field: 'file', filename: 'batch.jsonl', contentType: 'application/jsonl' } } });
    expect(upload.body).toBeUndefined();
    const sent = upload.multipart!.file.data.trimEnd().split('\n').map((l) => JSON.parse(l) as unknown);
    expect(sent).toEqual(lines.map((l) => ({ custom_id: l.customId, method: 'POST', url: '/v1/chat/completions', body: l.request.body })));
    expect(batch.parseUpload!({ id: 'file-abc', object: 'file', purpose: 'batch' })).toBe('file-abc');
    expect(() => batch.parseUpload!({ object: 'file' })).toThrow(UpstreamError);
  });

  it('creates from the uploaded file with the lines’ endpoint; embeddings lines name /v1/embeddings', () => {
    expect(batch.buildCreate({ lines: [chat('a', 'x')], fileId: 'file-1' }, 'sk')).toMatchObject({
      method: 'POST',
      path: '/batches',
      body: { input_file_id: 'file-1', endpoint: '/v1/chat/completions', completion_window: '24h' },
    });
    const emb: UpstreamBatchLine = { customId: 'e', request: buildEmbeddingRequest({ model: 'text-embedding-3-small', inputs: [{ type: 'text', text: 'x' }] }, 'sk') };
    expect(batch.buildCreate({ lines: [emb], fileId: 'file-2' }, 'sk').body).toMatchObject({ endpoint: '/v1/embeddings' });
    expect(() => batch.buildCreate({ lines: [chat('a', 'x')] }, 'sk')).toThrow(UpstreamError);
    expect(() => batch.buildUpload!([chat('a', 'x'), emb], 'sk')).toThrow(/one endpoint/);
    // Responses API lines (an endpoint that speaks it) name /v1/responses, and never share a batch with chat completions.
    const responses: UpstreamBatchLine = { customId: 'r', request: buildResponsesRequest({ model: 'o4-mini', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] }], stream: false }, 'sk') };
    expect(batch.buildCreate({ lines: [responses], fileId: 'file-3' }, 'sk').body).toMatchObject({ endpoint: '/v1/responses' });
    expect(JSON.parse(batch.buildUpload!([responses], 'sk').multipart!.file.data)).toMatchObject({ custom_id: 'r', url: '/v1/responses', body: { model: 'o4-mini', store: false } });
    expect(() => batch.buildUpload!([chat('a', 'x'), responses], 'sk')).toThrow(/one endpoint/);
    expect(batch.operations).toEqual(['text', 'embeddings']);
  });

  it('tags a batch with our id in its metadata and finds it on a page of the list', () => {
    expect(batch.buildCreate({ lines: [chat('a', 'x')], fileId: 'file-1', tag: 'ub_1' }, 'sk').body).toMatchObject({ metadata: { switchyard_chunk: 'ub_1' } });
    expect(batch.buildCreate({ lines: [chat('a', 'x')], fileId: 'file-1' }, 'sk').body).not.toHaveProperty('metadata');
    const find = batch.find!;
    expect(find.build(undefined, 'sk')).toEqual({ method: 'GET', path: '/batches?limit=100', headers: { authorization: 'Bearer sk', accept: 'application/json' } });
    expect(find.build('batch_9', 'sk').path).toBe('/batches?limit=100&after=batch_9');
    const data = [
      { id: 'batch_3', status: 'in_progress', created_at: 300, request_counts: { total: 4 }, metadata: { switchyard_chunk: 'ub_other' } },
      { id: 'batch_2', status: 'validating', created_at: 200, request_counts: { total: 0 }, metadata: { switchyard_chunk: 'ub_1' } },
      { id: 'batch_1', status: 'completed', created_at: 100, metadata: null },
    ];
    const page = find.parse({ object: 'list', data, last_id: 'batch_1', has_more: true });
    expect(page).toEqual({
      batches: [
        { id: 'batch_3', createdMs: 300_000, requests: 4, tag: 'ub_other', raw: data[0] },
        { id: 'batch_2', createdMs: 200_000, requests: 0, tag: 'ub_1', raw: data[1] },
        { id: 'batch_1', createdMs: 100_000, raw: data[2] },
      ],
      next: 'batch_1',
    });
    expect(find.parse({ object: 'list', data, has_more: false })).not.toHaveProperty('next');
    expect(find.parse({ object: 'list', data: [], has_more: false })).toEqual({ batches: [] });
    expect(() => find.parse({ object: 'list' })).toThrow(UpstreamError);

    // Matched by its tag alone: its size and time are not asked (a tag is proof).
    const sought = (tag: string) => ({ tag, sinceMs: 1e12, untilMs: 1e12, minLines: 9, maxLines: 9, known: new Set<string>(), others: [], complete: false });
    expect(find.match(page.batches, sought('ub_1'))).toEqual({ batch: page.batches[1], candidates: ['batch_2'] });
    expect(batch.parseBatch(find.match(page.batches, sought('ub_1')).batch!.raw, 'sk')).toEqual({ id: 'batch_2', status: 'running', results: [] });
    expect(find.match(page.batches, sought('ub_none'))).toEqual({ candidates: [] });
  });

  it('gets and cancels by id', () => {
    expect(batch.buildGet('batch_1', 'sk')).toEqual({ method: 'GET', path: '/batches/batch_1', headers: { authorization: 'Bearer sk', accept: 'application/json' } });
    expect(batch.buildCancel('batch_1', 'sk')).toMatchObject({ method: 'POST', path: '/batches/batch_1/cancel' });
  });

  it.each([
    ['validating', 'running'],
    ['in_progress', 'running'],
    ['finalizing', 'running'],
    ['cancelling', 'running'],
  ])('reads %s as %s, with no results yet', (status, ours) => {
    expect(batch.parseBatch({ id: 'batch_1', status, output_file_id: null }, 'sk')).toEqual({ id: 'batch_1', status: ours, results: [] });
  });

  it('reads an ended batch’s output and error files as text GETs, only those that exist', () => {
    const text = (id: string) => ({ method: 'GET', path: `/files/${id}/content`, headers: { authorization: 'Bearer sk', accept: 'application/json' }, replyAs: 'text' });
    expect(batch.parseBatch({ id: 'b', status: 'completed', output_file_id: 'file-o', error_file_id: 'file-e' }, 'sk').results).toEqual([text('file-o'), text('file-e')]);
    expect(batch.parseBatch({ id: 'b', status: 'expired', output_file_id: null, error_file_id: 'file-e' }, 'sk')).toEqual({ id: 'b', status: 'ended', results: [text('file-e')] });
    expect(batch.parseBatch({ id: 'b', status: 'cancelled' }, 'sk')).toEqual({ id: 'b', status: 'ended', results: [] });
  });

  it('reads a failed batch with its errors’ messages, and refuses an unknown status', () => {
    const failed = { id: 'b', status: 'failed', errors: { object: 'list', data: [{ code: 'invalid_url', message: 'bad url', line: 2 }, { code: 'x', message: 'second' }] } };
    expect(batch.parseBatch(failed, 'sk')).toEqual({ id: 'b', status: 'failed', results: [], error: 'bad url; second' });
    expect(batch.parseBatch({ id: 'b', status: 'failed' }, 'sk').error).toBe('the batch failed');
    expect(() => batch.parseBatch({ id: 'b', status: 'sleeping' }, 'sk')).toThrow(UpstreamError);
  });

  it('reads result lines: 200 → the body; error statuses and error objects → failures, retryable for 5xx, 429 and lines that never ran', () => {
    const line = (o: unknown) => batch.parseResultLine(JSON.stringify(o));
    const body = { id: 'chatcmpl-1', object: 'chat.completion', choices: [] };
    expect(line({ id: 'batch_req_1', custom_id: 'a', response: { status_code: 200, request_id: 'req_1', body }, error: null })).toEqual({ customId: 'a', ok: true, body });
    const err = (status: number, message: string) => ({ custom_id: 'b', response: { status_code: status, body: { error: { message, type: 'x', code: null } } }, error: null });
    expect(line(err(500, 'boom'))).toEqual({ customId: 'b', ok: false, status: 500, message: 'boom', retryable: true });
    expect(line(err(429, 'slow down'))).toEqual({ customId: 'b', ok: false, status: 429, message: 'slow down', retryable: true });
    expect(line(err(400, 'bad'))).toEqual({ customId: 'b', ok: false, status: 400, message: 'bad', retryable: false });
    expect(line(err(404, 'no model'))).toMatchObject({ status: 404, retryable: false });
    expect(line({ custom_id: 'c', response: null, error: { code: 'batch_expired', message: 'expired before it ran' } })).toEqual({ customId: 'c', ok: false, message: 'expired before it ran', retryable: true });
    expect(line({ custom_id: 'c', response: null, error: { code: 'batch_cancelled' } })).toEqual({ customId: 'c', ok: false, message: 'batch_cancelled', retryable: true });
    expect(() => batch.parseResultLine('{not json')).toThrow(UpstreamError);
    expect(() => line({ response: { status_code: 200, body } })).toThrow(UpstreamError);
  });
});
