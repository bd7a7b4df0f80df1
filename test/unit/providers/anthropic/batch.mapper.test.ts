import { anthropicAdapter } from '../../../../shared/providers/anthropic';
import { buildMessagesRequest } from '../../../../shared/providers/anthropic/request.mapper';
import type { ListedBatch, SoughtBatch, UpstreamBatchLine } from '../../../../shared/providers/adapter.types';
import { UpstreamError } from '../../../../shared/providers/upstream-error';

const batch = anthropicAdapter.batch!;
const line = (customId: string, stream = false): UpstreamBatchLine => ({
  customId,
  request: buildMessagesRequest({ model: 'claude-sonnet-4-5', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }], stream, maxOutputTokens: 50 }, 'sk-ant'),
});
const headers = { 'x-api-key': 'sk-ant', 'anthropic-version': '2023-06-01' };

describe('Anthropic batch mapper', () => {
  it('creates with the requests in the body: custom_id and the Messages body without stream; no upload', () => {
    const spec = batch.buildCreate({ lines: [line('gen_a'), line('gen_b', true)] }, 'sk-ant');
    expect(spec).toMatchObject({ method: 'POST', path: '/messages/batches', headers });
    const { stream: _ignored, ...params } = line('x', true).request.body as Record<string, unknown>;
    expect(spec.body).toEqual({ requests: [{ custom_id: 'gen_a', params: line('x').request.body }, { custom_id: 'gen_b', params }] });
    expect(JSON.stringify(spec.body)).not.toContain('"stream"');
    expect(batch.buildUpload).toBeUndefined();
    expect(batch.operations).toEqual(['text']);
    expect(() => batch.buildCreate({ lines: [line('has space')] }, 'sk-ant')).toThrow(UpstreamError);
    expect(() => batch.buildCreate({ lines: [] }, 'sk-ant')).toThrow(UpstreamError);
  });

  it('gets and cancels by id', () => {
    expect(batch.buildGet('msgbatch_1', 'sk-ant')).toMatchObject({ method: 'GET', path: '/messages/batches/msgbatch_1', headers });
    expect(batch.buildCancel('msgbatch_1', 'sk-ant')).toMatchObject({ method: 'POST', path: '/messages/batches/msgbatch_1/cancel', headers });
  });

  it('reads in_progress and canceling as running; ended reads the results from the batch’s own path', () => {
    expect(batch.parseBatch({ id: 'm', type: 'message_batch', processing_status: 'in_progress' }, 'k')).toEqual({ id: 'm', status: 'running', results: [] });
    expect(batch.parseBatch({ id: 'm', processing_status: 'canceling' }, 'k').status).toBe('running');
    const ended = batch.parseBatch({ id: 'msgbatch_9', processing_status: 'ended', results_url: 'https://elsewhere.example/v1/messages/batches/msgbatch_9/results' }, 'k');
    expect(ended).toEqual({ id: 'msgbatch_9', status: 'ended', results: [{ method: 'GET', path: '/messages/batches/msgbatch_9/results', headers: expect.objectContaining({ 'x-api-key': 'k' }), replyAs: 'text' }] });
    expect(() => batch.parseBatch({ id: 'm', processing_status: 'done' }, 'k')).toThrow(UpstreamError);
  });

  it('reads results: succeeded → the message; errored → the status of its error type; canceled and expired → retryable', () => {
    const read = (result: unknown) => batch.parseResultLine(JSON.stringify({ custom_id: 'a', result }));
    const message = { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'hi' }], usage: { input_tokens: 1, output_tokens: 1 } };
    expect(read({ type: 'succeeded', message })).toEqual({ customId: 'a', ok: true, body: message });
    const errored = (type: string, msg = 'why') => read({ type: 'errored', error: { type: 'error', error: { type, message: msg } } });
    expect(errored('invalid_request_error', 'max_tokens: required')).toEqual({ customId: 'a', ok: false, status: 400, message: 'max_tokens: required', retryable: false });
    expect(errored('overloaded_error')).toMatchObject({ status: 529, retryable: true });
    expect(errored('api_error')).toMatchObject({ status: 500, retryable: true });
    expect(errored('rate_limit_error')).toMatchObject({ status: 429, retryable: true });
    expect(errored('not_found_error')).toMatchObject({ status: 404, retryable: false });
    expect(errored('something_new')).toMatchObject({ status: 500, retryable: true });
    expect(read({ type: 'canceled' })).toMatchObject({ customId: 'a', ok: false, retryable: true });
    expect(read({ type: 'expired' })).toMatchObject({ customId: 'a', ok: false, retryable: true });
    expect(read({ type: 'canceled' })).not.toHaveProperty('status');
    expect(() => read({ type: 'mystery' })).toThrow(UpstreamError);
    expect(() => batch.parseResultLine('nope')).toThrow(UpstreamError);
  });

  it('lists batches newest first, 100 a page, the next page after the last id; reads each one’s creation and request count', () => {
    const find = batch.find!;
    expect(find.build(undefined, 'sk-ant')).toEqual({ method: 'GET', path: '/messages/batches?limit=100', headers: expect.objectContaining(headers) });
    expect(find.build('msgbatch_9', 'sk-ant').path).toBe('/messages/batches?limit=100&after_id=msgbatch_9');
    const counts = (processing: number, succeeded = 0) => ({ processing, succeeded, errored: 0, canceled: 0, expired: 0 });
    const data = [
      { id: 'msgbatch_2', type: 'message_batch', processing_status: 'in_progress', request_counts: counts(4), created_at: '2025-01-02T00:00:10.500Z' },
      { id: 'msgbatch_1', type: 'message_batch', processing_status: 'ended', request_counts: counts(0, 3), created_at: '2025-01-02T00:00:00Z' },
      { id: 'msgbatch_0', type: 'message_batch', processing_status: 'ended', request_counts: { succeeded: 1 } },
    ];
    const page = find.parse({ data, has_more: true, first_id: 'msgbatch_2', last_id: 'msgbatch_0' });
    expect(page).toEqual({
      batches: [
        { id: 'msgbatch_2', createdMs: Date.UTC(2025, 0, 2, 0, 0, 10, 500), requests: 4, raw: data[0] },
        { id: 'msgbatch_1', createdMs: Date.UTC(2025, 0, 2), requests: 3, raw: data[1] },
        { id: 'msgbatch_0', raw: data[2] },
      ],
      next: 'msgbatch_0',
    });
    expect(find.parse({ data, has_more: false, first_id: 'msgbatch_2', last_id: 'msgbatch_0' })).not.toHaveProperty('next');
    expect(find.parse({ data: [], has_more: false, first_id: null, last_id: null })).toEqual({ batches: [] });
    expect(() => find.parse({ has_more: false })).toThrow(UpstreamError);
  });

  describe('finds the batch an earlier run created by its shape (no tag is kept)', () => {
    const T = Date.UTC(2025, 0, 2);
    const listed = (id: string, createdMs: number | undefined, requests: number | undefined): ListedBatch => ({ id, raw: { id }, ...(createdMs !== undefined && { createdMs }), ...(requests !== undefined && { requests }) });
    const sought = (over: Partial<SoughtBatch> = {}): SoughtBatch => ({ tag: 'ub_1', sinceMs: T, untilMs: T + 60_000, minLines: 3, maxLines: 5, known: new Set(), others: [], complete: true, ...over });
    const match = (l: ListedBatch[], s: SoughtBatch) => batch.find!.match(l, s);

    it('takes the one batch created in the window with as many requests as the create could have carried', () => {
      const ours = listed('msgbatch_ours', T + 1000, 4);
      const around = [listed('msgbatch_late', T + 61_000, 4), ours, listed('msgbatch_big', T + 2000, 6), listed('msgbatch_small', T + 2000, 2), listed('msgbatch_early', T - 1, 4), listed('msgbatch_unread', undefined, 4)];
      expect(match(around, sought())).toEqual({ batch: ours, candidates: ['msgbatch_ours'] });
      // Both ends of the window and of the size are in.
      expect(match([listed('a', T, 3)], sought()).batch?.id).toBe('a');
      expect(match([listed('b', T + 60_000, 5)], sought()).batch?.id).toBe('b');
      expect(match([listed('c', T, undefined)], sought())).toEqual({ candidates: [] });
    });

    it('never takes a batch a chunk recorded', () => {
      const l = [listed('msgbatch_recorded', T + 1000, 4)];
      expect(match(l, sought({ known: new Set(['msgbatch_recorded']) }))).toEqual({ candidates: [] });
      expect(match([...l, listed('msgbatch_ours', T + 500, 4)], sought({ known: new Set(['msgbatch_recorded']) })).batch?.id).toBe('msgbatch_ours');
    });

    it('takes none when two fit, when the pages stop short of the window, or when another chunk in submitting could have made it', () => {
      const two = [listed('msgbatch_a', T + 2000, 4), listed('msgbatch_b', T + 1000, 4)];
      expect(match(two, sought())).toEqual({ candidates: ['msgbatch_a', 'msgbatch_b'] });
      expect(match(two.slice(0, 1), sought({ complete: false }))).toEqual({ candidates: ['msgbatch_a'] });
      expect(match(two.slice(0, 1), sought({ others: [{ sinceMs: T + 1500, maxLines: 4 }] }))).toEqual({ candidates: ['msgbatch_a'] });
      // An other chunk too small for it, or gone submitting after it was created, could not have made it.
      expect(match(two.slice(0, 1), sought({ others: [{ sinceMs: T + 1500, maxLines: 3 }, { sinceMs: T + 2001, maxLines: 10 }] })).batch?.id).toBe('msgbatch_a');
    });
  });
});
