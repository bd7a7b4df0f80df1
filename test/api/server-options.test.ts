import http from 'node:http';
import { serverOptionsFor } from '../../api/app';
import { listen } from '../../shared/runtime/bootstrap';
import { createTestApp, type TestApp } from '../helpers/test-app';

// The API's HTTP server makes its requests and responses on the app's own prototypes (api/app.ts serverOptionsFor),
// so Express never changes an object's prototype per request (bench/rounds/06-what-v8-kept.md).
let h: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
const seen: Array<{ req: boolean; res: boolean; nodeReq: boolean; nodeRes: boolean }> = [];

beforeAll(async () => {
  h = await createTestApp();
  server = await listen(h.app, 0, serverOptionsFor(h.app));
  // Runs before Express's own handler: what Node made, before Express could set anything.
  server.server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    seen.push({
      req: Object.getPrototypeOf(req) === h.app.request,
      res: Object.getPrototypeOf(res) === h.app.response,
      nodeReq: req instanceof http.IncomingMessage,
      nodeRes: res instanceof http.ServerResponse,
    });
  });
});
afterAll(async () => {
  await server?.close();
  await h?.close();
});

test('requests and responses are born on the app prototypes, and the API answers through them', async () => {
  const base = `http://127.0.0.1:${server.port}`;
  const health = await fetch(`${base}/healthz`);
  expect(health.status).toBe(200);
  expect(health.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);

  // A JSON body read by body-parser, refused in the error envelope by the auth guard.
  const refused = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-not-a-key' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(refused.status).toBe(401);
  const body = (await refused.json()) as { error: { code: string }; trace_id: string };
  expect(body.error.code).toBe('UNAUTHORIZED');
  expect(body.trace_id).toBe(refused.headers.get('x-trace-id'));

  expect(seen).toHaveLength(2);
  for (const s of seen) expect(s).toEqual({ req: true, res: true, nodeReq: true, nodeRes: true });
});
