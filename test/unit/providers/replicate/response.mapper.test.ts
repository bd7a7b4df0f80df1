import { extractReplicateError, parsePrediction } from '../../../../shared/providers/replicate/response.mapper';
import { isUpstreamError } from '../../../../shared/providers/upstream-error';

const base = { id: 'p1', model: 'google/veo-3', version: 'hidden', input: {}, logs: '', error: null, urls: {}, metrics: {} };

describe('Replicate response mapper', () => {
  it.each([
    ['starting', 'pending'],
    ['processing', 'processing'],
    ['failed', 'failed'],
    ['canceled', 'cancelled'],
    ['aborted', 'cancelled'],
  ])('maps status %s to %s', (upstream, ours) => {
    expect(parsePrediction({ ...base, status: upstream, output: null }).status).toBe(ours);
  });

  it('reads one output URL and the video duration', () => {
    const t = parsePrediction({ ...base, status: 'succeeded', output: 'https://replicate.delivery/x/out.mp4', metrics: { predict_time: 12.5, video_output_duration_seconds: 8 } });
    expect(t).toEqual({ id: 'p1', status: 'succeeded', outputs: ['https://replicate.delivery/x/out.mp4'], metrics: { durationSeconds: 8, predictSeconds: 12.5 } });
  });

  it('reads an array of output URLs and the image count', () => {
    const t = parsePrediction({ ...base, status: 'succeeded', output: ['https://r/a.png', 'https://r/b.png'], metrics: { image_output_count: 2 } });
    expect(t.outputs).toEqual(['https://r/a.png', 'https://r/b.png']);
    expect(t.metrics.imageCount).toBe(2);
  });

  it('reads an object output and an audio duration', () => {
    const t = parsePrediction({ ...base, status: 'succeeded', output: { audio: 'https://r/a.mp3' }, metrics: { audio_output_duration_seconds: 31.2 } });
    expect(t.outputs).toEqual(['https://r/a.mp3']);
    expect(t.metrics.durationSeconds).toBe(31.2);
  });

  it('keeps text output (language models) apart from files', () => {
    const t = parsePrediction({ ...base, status: 'succeeded', output: ['Hel', 'lo'], metrics: { input_token_count: 3, output_token_count: 2 } });
    expect(t).toMatchObject({ outputs: [], text: 'Hello', metrics: { inputTokens: 3, outputTokens: 2 } });
  });

  it('keeps text that comes with a file (interface.md `content`), and reads files listed under an object key', () => {
    const one = parsePrediction({ ...base, status: 'succeeded', output: { image: 'https://r/a.png', text: 'A cat, as asked' } });
    expect(one).toMatchObject({ outputs: ['https://r/a.png'], text: 'A cat, as asked' });
    const several = parsePrediction({ ...base, status: 'succeeded', output: { images: ['https://r/a.png', 'https://r/b.png'], text: ['Two ', 'cats'] } });
    expect(several).toMatchObject({ outputs: ['https://r/a.png', 'https://r/b.png'], text: 'Two cats' });
    expect(parsePrediction({ ...base, status: 'succeeded', output: 'I cannot draw that' })).toMatchObject({ outputs: [], text: 'I cannot draw that' });
  });

  it('carries the error text of a failed prediction', () => {
    expect(parsePrediction({ ...base, status: 'failed', error: 'CUDA out of memory' }).error).toBe('CUDA out of memory');
  });

  it.each([
    ['no id', { status: 'starting' }],
    ['an unknown status', { ...base, status: 'thinking' }],
    ['success without output', { ...base, status: 'succeeded', output: null }],
  ])('treats %s as a malformed reply', (_what, body) => {
    try {
      parsePrediction(body);
      throw new Error('expected a failure');
    } catch (e) {
      expect(isUpstreamError(e) && e.failure.reason).toBe('malformed_reply');
    }
  });

  it('reads problem documents', () => {
    expect(extractReplicateError({ title: 'Input validation failed', detail: '- prompt: required', status: 422 })).toEqual({ message: '- prompt: required' });
    expect(extractReplicateError({ title: 'Unauthenticated' })).toEqual({ message: 'Unauthenticated' });
    expect(extractReplicateError('nope')).toEqual({});
  });
});
