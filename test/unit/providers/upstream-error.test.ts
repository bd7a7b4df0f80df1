import { extractAnthropicError } from '../../../shared/providers/anthropic/response.mapper';
import { extractOpenAIError } from '../../../shared/providers/openai/response.mapper';
import { parseRetryAfter, upstreamFailure } from '../../../shared/providers/upstream-error';

describe('upstream failure classification', () => {
  it.each([
    [500, 'provider_error', true],
    [502, 'provider_error', true],
    [503, 'provider_error', true],
    [529, 'provider_error', true],
    [504, 'upstream_timeout', true],
    [408, 'upstream_timeout', true],
    [429, 'rate_limited', true],
    [401, 'unauthorized', true],
    [403, 'unauthorized', true],
    [400, 'bad_request', false],
    [404, 'bad_request', false],
    [413, 'bad_request', false],
    [422, 'bad_request', false],
  ])('HTTP %i → %s, fallback %s', (status, reason, fallback) => {
    expect(upstreamFailure({ kind: 'reply', status, body: 'oops' })).toMatchObject({ reason, fallback, status, raw: 'oops' });
  });

  it('takes the message from the kind’s error body', () => {
    const body = JSON.stringify({ error: { message: 'This model’s maximum context length is 128000 tokens.', type: 'invalid_request_error', code: 'context_length_exceeded' } });
    expect(upstreamFailure({ kind: 'reply', status: 400, body, extract: extractOpenAIError })).toMatchObject({
      reason: 'bad_request',
      message: 'This model’s maximum context length is 128000 tokens.',
      fallback: false,
    });
    expect(upstreamFailure({ kind: 'reply', status: 502, body: '<html>Bad gateway</html>', extract: extractOpenAIError }).message).toBe('upstream answered HTTP 502');
  });

  it('classifies an in-stream error by its type', () => {
    const body = JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    expect(upstreamFailure({ kind: 'stream_error', body, extract: extractAnthropicError })).toMatchObject({ reason: 'provider_error', message: 'Overloaded', fallback: true });
  });

  it.each([
    [{ code: 'UND_ERR_HEADERS_TIMEOUT' }, 'upstream_timeout'],
    [{ code: 'UND_ERR_BODY_TIMEOUT' }, 'upstream_timeout'],
    [{ code: 'UND_ERR_SOCKET', cause: { code: 'ECONNRESET' } }, 'provider_error'],
    [{ code: 'ECONNREFUSED' }, 'provider_error'],
    [{}, 'provider_error'],
  ])('network error %j → %s, fallback', (props, reason) => {
    const error = Object.assign(new Error('boom'), props);
    expect(upstreamFailure({ kind: 'network', error })).toMatchObject({ reason, fallback: true });
  });

  it('classifies timeouts, malformed replies and unsupported input', () => {
    expect(upstreamFailure({ kind: 'timeout', timeoutMs: 50 })).toEqual({ reason: 'upstream_timeout', message: 'no answer within 50 ms', fallback: true });
    expect(upstreamFailure({ kind: 'malformed', message: 'not JSON', raw: 'x'.repeat(5000) }).raw).toHaveLength(2001);
    expect(upstreamFailure({ kind: 'unsupported', message: 'no files' })).toEqual({ reason: 'bad_request', message: 'no files', fallback: true });
  });

  it('reads Retry-After as seconds or a date', () => {
    expect(parseRetryAfter('2', 0)).toBe(2000);
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:10 GMT', 4000)).toBe(6000);
    expect(parseRetryAfter('soon', 0)).toBeUndefined();
  });
});
