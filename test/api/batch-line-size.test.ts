/**
 * A batch line is bounded like the call it names (docs/batches.md; issue 38 item 5): a line longer than a request body
 * may be (MAX_BODY_BYTES, measured in the line's bytes as the route measures a body) answers 413 in the error file, as
 * its call would, and never runs; its body is not validated (the route answers 413 before it reads a body); the other
 * lines run. MAX_BODY_BYTES is lowered to 64 KiB here, so the lines stay small.
 */
import request from 'supertest';
import { chatLines, chargesOf, linesOf, newChatBatch } from '../helpers/batch-driving';
import { createTestStack, STACK_MODELS, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

const MAX = 64 * 1024;
let s: TestStack;

beforeAll(async () => {
  s = await createTestStack({ env: { BATCH_POLL_MS: '50', MAX_BODY_BYTES: String(MAX) } });
});
afterAll(() => s.close());

/** A chat line of exactly `bytes` bytes (its JSON), custom_id `id`, `extra` in its body. */
function lineOf(id: string, bytes: number, extra: Record<string, unknown> = {}): object {
  const base = { custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { model: STACK_MODELS.chat, ...extra, messages: [{ role: 'user', content: '' }], max_tokens: 16 } };
  const pad = bytes - Buffer.byteLength(JSON.stringify(base));
  return { ...base, body: { ...base.body, messages: [{ role: 'user', content: 'é'.repeat(Math.floor(pad / 2)) + 'x'.repeat(pad % 2) }] } };
}

it('answers 413 for a line longer than MAX_BODY_BYTES, never running it, and runs the others; the route answers the same body 413', async () => {
  const over = lineOf('over', MAX + 1);
  const lines = [chatLines(1, 'ok')[0]!, lineOf('at-limit', MAX), over, lineOf('over-invalid', 3 * MAX, { stream: true, no_such_field: 1 })];
  expect(lines.map((l) => Buffer.byteLength(JSON.stringify(l)))).toEqual([expect.any(Number), MAX, MAX + 1, 3 * MAX]);
  const posts = s.fake.requests.length;
  const { id, auth, organizationId } = await newChatBatch(s, lines);
  const b = await waitUntil(async () => {
    const got = (await request(s.app).get(`/v1/batches/${id}`).set(auth)).body;
    return ['completed', 'failed'].includes(got.status) ? got : undefined;
  }, 30_000);
  expect(b.status).toBe('completed');
  expect(b.request_counts).toEqual({ total: 4, completed: 2, failed: 2 });
  const errors = await linesOf(s, auth, b.error_file_id);
  expect(errors.map((e) => [e.custom_id, e.response.status_code, e.response.body.error?.code, e.response.request_id]).sort()).toEqual([
    ['over', 413, 'PAYLOAD_TOO_LARGE', null],
    ['over-invalid', 413, 'PAYLOAD_TOO_LARGE', null],
  ]);
  expect(errors.find((e) => e.custom_id === 'over')!.response.body.error?.message).toBe(`This line is ${MAX + 1} bytes: a request body holds at most ${MAX} bytes`);
  expect((await linesOf(s, auth, b.output_file_id)).map((l) => l.custom_id).sort()).toEqual(['at-limit', 'ok-0']);
  // The long lines made no generation and reached no provider.
  const { gens } = await chargesOf(s, organizationId, id);
  expect(gens).toHaveLength(2);
  expect(s.fake.requests.length - posts).toBe(2);
  // As the call it names: the route refuses that body (the line's own, a few bytes shorter than the line) the same way.
  const key = (await s.seed()).auth;
  const tooLong = { ...(over as { body: object }).body, messages: [{ role: 'user', content: 'x'.repeat(MAX) }] };
  expect((await request(s.app).post('/v1/chat/completions').set(key).send(tooLong)).status).toBe(413);
});
