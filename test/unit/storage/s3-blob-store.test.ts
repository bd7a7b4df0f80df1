import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { S3BlobStore } from '../../../shared/storage/s3-blob-store';
import { readAll } from '../../../shared/storage/blob-store';
import { Readable } from 'node:stream';

/**
 * There is no S3 here, so a minimal S3-compatible server on loopback (path-style PutObject, GetObject with Range,
 * DeleteObject) checks what the store sends over the wire. It does not verify signatures; it checks one is there.
 */
interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}
const objects = new Map<string, { body: Buffer; type: string }>();
const seen: Seen[] = [];
let server: http.Server;
let endpoint: string;

beforeAll(async () => {
  server = http.createServer(async (req, res) => {
    const body = await readAll(req);
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    const key = decodeURIComponent(new URL(req.url!, 'http://x').pathname);
    if (req.method === 'PUT') {
      objects.set(key, { body, type: String(req.headers['content-type']) });
      res.writeHead(200, { ETag: '"e"' }).end();
    } else if (req.method === 'GET') {
      const o = objects.get(key);
      if (!o) {
        res.writeHead(404, { 'Content-Type': 'application/xml' }).end('<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>nope</Message></Error>');
        return;
      }
      const m = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
      if (m) {
        const start = Number(m[1]);
        const end = m[2] ? Math.min(Number(m[2]), o.body.length - 1) : o.body.length - 1;
        const part = o.body.subarray(start, end + 1);
        res.writeHead(206, { 'Content-Type': o.type, 'Content-Length': part.length, 'Content-Range': `bytes ${start}-${end}/${o.body.length}` }).end(part);
      } else res.writeHead(200, { 'Content-Type': o.type, 'Content-Length': o.body.length }).end(o.body);
    } else if (req.method === 'DELETE') {
      objects.delete(key);
      res.writeHead(204).end();
    } else res.writeHead(405).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

const store = () =>
  new S3BlobStore({ bucket: 'media', region: 'eu-central-1', endpoint, accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', forcePathStyle: true, prefix: 'sy-' });

describe('S3BlobStore against an S3-compatible server', () => {
  it('puts a signed object with its type and length under bucket/prefix+key (path style)', async () => {
    seen.length = 0;
    const bytes = Buffer.from('0123456789');
    expect(await store().put('file_1', bytes, 'image/png')).toEqual({ size: 10 });
    const put = seen[0];
    expect(put.method).toBe('PUT');
    expect(put.url.split('?')[0]).toBe('/media/sy-file_1');
    expect(put.headers['content-type']).toBe('image/png');
    expect(put.headers['content-length']).toBe('10');
    expect(put.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/s3\/aws4_request/);
    // No streaming checksum trailers: plain bodies that every S3-compatible service accepts.
    expect(put.headers['content-encoding']).toBeUndefined();
    expect(objects.get('/media/sy-file_1')!.body).toEqual(bytes);
  });

  it('puts a stream of unknown length by reading it first', async () => {
    expect(await store().put('file_2', Readable.from([Buffer.from('ab'), Buffer.from('cd')]), 'audio/mpeg')).toEqual({ size: 4 });
    expect(objects.get('/media/sy-file_2')!.body.toString()).toBe('abcd');
  });

  it('gets the whole object and a range, with the total size', async () => {
    const s = store();
    await s.put('file_3', Buffer.from('abcdefghij'), 'video/mp4');
    const whole = await s.get('file_3');
    expect(whole!.size).toBe(10);
    expect(whole!.contentType).toBe('video/mp4');
    expect((await readAll(whole!.body)).toString()).toBe('abcdefghij');
    seen.length = 0;
    const part = await s.get('file_3', { start: 2, end: 4 });
    expect(seen[0].headers.range).toBe('bytes=2-4');
    expect(part!.size).toBe(10);
    expect((await readAll(part!.body)).toString()).toBe('cde');
    const tail = await s.get('file_3', { start: 7 });
    expect((await readAll(tail!.body)).toString()).toBe('hij');
  });

  it('answers null for a missing object and deletes idempotently', async () => {
    const s = store();
    await s.put('file_4', Buffer.from('x'), 'image/webp');
    await s.delete('file_4');
    expect(await s.get('file_4')).toBeNull();
    await expect(s.delete('file_4')).resolves.toBeUndefined();
  });

  it('refuses keys that could leave the prefix', async () => {
    await expect(store().put('../x', Buffer.from('x'), 'image/png')).rejects.toThrow('Invalid blob key');
  });
});
