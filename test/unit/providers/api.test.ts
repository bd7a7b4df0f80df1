import busboy from 'busboy';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createUpstreamClient, joinUpstreamUrl, type UpstreamClient } from '../../../shared/providers/api';
import { extractOpenAIError } from '../../../shared/providers/openai/response.mapper';
import type { HttpRequestSpec } from '../../../shared/providers/provider.types';
import { UpstreamError } from '../../../shared/providers/upstream-error';
import { pause } from '../../helpers/until';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const routes = new Map<string, Handler>();
const seen: Array<{ path: string; headers: IncomingMessage['headers']; body: string }> = [];
let connections = 0;
let server: Server;
let baseUrl: string;
let client: UpstreamClient;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body });
      const handler = routes.get((req.url ?? '').replace(/^\/openai\/v1/, '').split('?')[0] ?? '');
      if (handler) handler(req, res, body);
      else res.writeHead(404).end();
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/openai/v1/`;
  client = createUpstreamClient({ keepAliveTimeoutMs: 5000 });
});

afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const spec = (path: string, body: unknown = { model: 'm' }): HttpRequestSpec => ({ method: 'POST', path, headers: { authorization: 'Bearer k' }, body });

async function failureOf(promise: Promise<unknown>): Promise<UpstreamError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(UpstreamError);
    return error as UpstreamError;
  }
  throw new Error('expected an UpstreamError');
}

routes.set('/ok', (_req, res, body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: JSON.parse(body) })));
routes.set('/slow', () => undefined); // never answers
routes.set('/jsonl', (_req, res) => res.writeHead(200, { 'content-type': 'application/octet-stream' }).end('{"a":1}\n{"a":2}\n'));
// Reads the form the way our own upload route does (busboy), and echoes what it found.
routes.set('/upload', (req, res, body) => {
  const fields: Record<string, string> = {};
  const files: Array<{ field: string; filename: string; mimeType: string; data: string }> = [];
  const form = busboy({ headers: req.headers });
  form.on('field', (name, value) => (fields[name] = value));
  form.on('file', (field, stream, info) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => files.push({ field, filename: info.filename ?? '', mimeType: info.mimeType, data: Buffer.concat(chunks).toString('utf8') }));
  });
  form.on('close', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ fields, files })));
  form.end(Buffer.from(body, 'utf8'));
});
routes.set('/reset', (req) => req.socket.destroy());
routes.set('/html', (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>'));
routes.set('/limited', (_req, res) =>
  res.writeHead(429, { 'retry-after': '3', 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Rate limit reached', code: 'rate_limit_exceeded' } })),
);
routes.set('/sse', (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('data: {"a"');
  // Pacing: the event's second half a moment later, so it reaches the client in another chunk.
  void pause(20).then(() => res.end(':1}\n\ndata: [DONE]\n\n'));
});
// Headers at once, then a byte every 30 ms: never silent for long, but past a 150 ms deadline for the whole reply.
routes.set('/trickle', (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  const every = setInterval(() => (res.writableEnded ? clearInterval(every) : res.write(' ')), 30);
  res.on('close', () => clearInterval(every));
});
routes.set('/sse-stall', (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write('data: first\n\n'); // then silence
});

describe('upstream client', () => {
  it('joins the base path, sends the JSON body and reuses one keep-alive connection', async () => {
    const before = connections;
    for (let i = 0; i < 3; i++) {
      const reply = await client.request(baseUrl, spec('/ok', { n: i }), { timeoutMs: 2000 });
      expect(reply).toMatchObject({ status: 200, json: { echo: { n: i } } });
      // undici hands the socket back to the pool a tick after the body ends; a back-to-back call would open another.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(connections - before).toBe(1);
    const last = seen.at(-1);
    expect(last?.path).toBe('/openai/v1/ok');
    expect(last?.headers).toMatchObject({ authorization: 'Bearer k', 'content-type': 'application/json' });
  });

  it('sends a multipart/form-data body that a form parser reads back field by field', async () => {
    const data = '{"custom_id":"a","body":{"text":"ünïcode \\"quoted\\""}}\n{"custom_id":"b"}\n';
    const upload: HttpRequestSpec = {
      method: 'POST',
      path: '/upload',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      multipart: { fields: { purpose: 'batch' }, file: { field: 'file', filename: 'lines.jsonl', contentType: 'application/jsonl', data } },
    };
    const reply = await client.request(baseUrl, upload, { timeoutMs: 2000 });
    expect(reply.json).toEqual({ fields: { purpose: 'batch' }, files: [{ field: 'file', filename: 'lines.jsonl', mimeType: 'application/jsonl', data }] });
    const sent = seen.at(-1);
    expect(sent?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=-+switchyard[0-9a-f]{32}$/);
    expect(sent?.headers.authorization).toBe('Bearer k');
  });

  it("returns a 2xx reply as text when the spec asks replyAs 'text', and still classifies a non-2xx", async () => {
    const get = (path: string): HttpRequestSpec => ({ method: 'GET', path, headers: { authorization: 'Bearer k' }, replyAs: 'text' });
    const reply = await client.request(baseUrl, get('/jsonl'), { timeoutMs: 2000 });
    expect(reply).toMatchObject({ status: 200, text: '{"a":1}\n{"a":2}\n', json: undefined });
    const error = await failureOf(client.request(baseUrl, get('/limited'), { timeoutMs: 2000, extractError: extractOpenAIError }));
    expect(error.failure).toMatchObject({ reason: 'rate_limited', status: 429, message: 'Rate limit reached' });
  });

  it('times out as upstream_timeout', async () => {
    const error = await failureOf(client.request(baseUrl, spec('/slow'), { timeoutMs: 100 }));
    expect(error.failure).toMatchObject({ reason: 'upstream_timeout', fallback: true });
  });

  it('turns a reset connection into provider_error', async () => {
    const error = await failureOf(client.request(baseUrl, spec('/reset'), { timeoutMs: 2000 }));
    expect(error.failure).toMatchObject({ reason: 'provider_error', fallback: true });
  });

  it('calls a 2xx that is not JSON malformed_reply', async () => {
    const error = await failureOf(client.request(baseUrl, spec('/html'), { timeoutMs: 2000 }));
    expect(error.failure).toMatchObject({ reason: 'malformed_reply', fallback: true, raw: '<html>maintenance</html>' });
  });

  it('reads a non-2xx body with the kind’s extractor and keeps Retry-After', async () => {
    const error = await failureOf(client.request(baseUrl, spec('/limited'), { timeoutMs: 2000, extractError: extractOpenAIError }));
    expect(error.failure).toMatchObject({ reason: 'rate_limited', status: 429, message: 'Rate limit reached', fallback: true });
    expect(error.retryAfterMs).toBe(3000);
  });

  it('ends a reply that trickles past the deadline for the whole exchange as upstream_timeout', async () => {
    // The trickle never ends and is never silent: only a deadline for the whole exchange ends it.
    const error = await failureOf(client.request(baseUrl, spec('/trickle'), { timeoutMs: 150 }));
    expect(error.failure).toMatchObject({ reason: 'upstream_timeout', fallback: true });
  });

  it('marks the caller’s own abort as aborted, with no fallback', async () => {
    const error = await failureOf(client.request(baseUrl, spec('/slow'), { timeoutMs: 2000, signal: AbortSignal.timeout(50) }));
    expect(error.aborted).toBe(true);
    expect(error.failure.fallback).toBe(false);
  });

  it('streams SSE events assembled across chunks', async () => {
    const events = [];
    for await (const event of await client.stream(baseUrl, spec('/sse'), { timeoutMs: 1000 })) events.push(event);
    expect(events).toEqual([{ data: '{"a":1}' }, { data: '[DONE]' }]);
  });

  it('rejects a non-2xx stream before iteration', async () => {
    const error = await failureOf(client.stream(baseUrl, spec('/limited'), { timeoutMs: 1000, extractError: extractOpenAIError }));
    expect(error.failure).toMatchObject({ reason: 'rate_limited', status: 429 });
  });

  it('times out a stream that goes silent between chunks', async () => {
    const events: unknown[] = [];
    const iterate = async () => {
      for await (const event of await client.stream(baseUrl, spec('/sse-stall'), { timeoutMs: 150 })) events.push(event);
    };
    const error = await failureOf(iterate());
    expect(events).toEqual([{ data: 'first' }]);
    expect(error.failure.reason).toBe('upstream_timeout');
  });
});

describe('joinUpstreamUrl', () => {
  it('appends the spec path to a base that has a path or a query', () => {
    expect(joinUpstreamUrl('http://127.0.0.1:4010/openai/v1', '/chat/completions')).toEqual({ origin: 'http://127.0.0.1:4010', path: '/openai/v1/chat/completions' });
    expect(joinUpstreamUrl('https://api.example.com/', '/models/x:streamGenerateContent?alt=sse')).toEqual({
      origin: 'https://api.example.com',
      path: '/models/x:streamGenerateContent?alt=sse',
    });
    expect(joinUpstreamUrl('https://az.example.com/openai?api-version=2024-10-21', '/chat/completions')).toEqual({
      origin: 'https://az.example.com',
      path: '/openai/chat/completions?api-version=2024-10-21',
    });
  });
});
