import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { openEventStream } from '../../api/services/text-replies';

/**
 * A Server-Sent Events reply starts at once (api/services/text-replies.ts openEventStream): its status and headers,
 * with the stream's first events when it has them (one write), or alone when it has none yet. Either way the client
 * has them while the reply stays open, before anything else is written.
 */
let server: http.Server;
let port: number;
const clients = new Set<http.ClientRequest>();

beforeAll(async () => {
  const app = express();
  // The head to send comes in the query; the reply is left open (nothing more is written).
  app.get('/events', (req, res) => {
    const head = typeof req.query.head === 'string' ? req.query.head : undefined;
    openEventStream(res, head === undefined ? {} : { head });
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  port = (server.address() as AddressInfo).port;
});

afterEach(() => {
  for (const c of clients) c.destroy();
  clients.clear();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** The reply's status and content type, and its body once it holds `head` (the headers alone without one). */
function firstBytes(head: string | undefined): Promise<{ status: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const path = head === undefined ? '/events' : `/events?head=${encodeURIComponent(head)}`;
    const req = http.get({ host: '127.0.0.1', port, path }, (res) => {
      const answer = { status: res.statusCode!, type: res.headers['content-type'] };
      if (head === undefined) return resolve({ ...answer, body: '' });
      res.setEncoding('utf8');
      let body = '';
      res.on('data', (chunk: string) => {
        body += chunk;
        if (body.length >= head.length) resolve({ ...answer, body });
      });
    });
    clients.add(req);
    req.on('error', reject);
  });
}

it('sends the headers with the first events while the reply stays open', async () => {
  const head = 'data: {"id":"gen_1","choices":[{"delta":{"role":"assistant"}}]}\n\n';
  const got = await firstBytes(head);
  expect(got.status).toBe(200);
  expect(got.type).toBe('text/event-stream; charset=utf-8');
  expect(got.body).toBe(head);
});

it('sends the headers alone when the stream has no first events yet', async () => {
  const got = await firstBytes(undefined);
  expect(got.status).toBe(200);
  expect(got.type).toBe('text/event-stream; charset=utf-8');
});
