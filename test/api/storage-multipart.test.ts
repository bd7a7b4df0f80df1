import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedOrg } from '../helpers/fixtures';
import { LocalBlobStore } from '../../shared/storage/local-blob-store';

// Malformed and cut multipart uploads (POST /v1/storage/files): each is refused in the error envelope, and the
// process that read it goes on serving. A busboy 'error' nobody listened to used to end the process. A client that
// leaves mid-upload: test/api/metrics.test.ts (499).
let h: TestApp;
let root: string;
let org: Awaited<ReturnType<typeof seedOrg>>;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-multipart-'));
  h = await createTestApp({ deps: { authCacheMs: 0, blobStore: new LocalBlobStore(root) }, env: { MAX_BODY_BYTES: '4096' } });
  org = await seedOrg(h.t.db);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const part = (headers: string, body: string | Buffer = '') => Buffer.concat([Buffer.from(`--XX\r\n${headers}\r\n\r\n`), Buffer.from(body), Buffer.from('\r\n')]);
const filePart = (body: string | Buffer = 'png-bytes') => part('Content-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png', body);
const end = Buffer.from('--XX--\r\n');
const MULTIPART = 'multipart/form-data; boundary=XX';
const upload = (body: Buffer, type = MULTIPART) =>
  request(h.app).post('/v1/storage/files').set('Authorization', `Bearer ${org.ownerToken}`).set('Content-Type', type).send(body);

describe('malformed multipart uploads', () => {
  const cases: Array<[string, Buffer, string]> = [
    ['ends inside the file part (no closing boundary)', Buffer.from('--XX\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\npng-bytes'), MULTIPART],
    ['ends inside a part header', Buffer.from('--XX\r\nContent-Disposition: form-da'), MULTIPART],
    ['ends after a field part', part('Content-Disposition: form-data; name="storagePolicy"', 'PERMANENT'), MULTIPART],
    ['uses another boundary than its Content-Type', Buffer.from(filePart().toString().replace(/--XX/g, '--YY') + '--YY--\r\n'), MULTIPART],
    ['has no boundary in its Content-Type', Buffer.concat([filePart(), end]), 'multipart/form-data'],
    ['has a part header over 16 kB', Buffer.concat([part(`Content-Disposition: form-data; name="file"; filename="${'a'.repeat(20_000)}.png"\r\nContent-Type: image/png`, 'x'), end]), MULTIPART],
    ['has 100 parts before its file', Buffer.concat([...Array.from({ length: 100 }, (_, i) => part(`Content-Disposition: form-data; name="f${i}"`, 'v')), filePart(), end]), MULTIPART],
    ['has a file part without a name', Buffer.concat([part('Content-Disposition: form-data; filename="a.png"\r\nContent-Type: image/png', 'x'), end]), MULTIPART],
    ['has a file part without a content type', Buffer.concat([part('Content-Disposition: form-data; name="file"; filename="a.png"', 'x'), end]), MULTIPART],
    ['has a part without Content-Disposition', Buffer.concat([part('Content-Type: image/png', 'x'), end]), MULTIPART],
    ['is garbage', Buffer.from('\r\n--\r\n--XX\r\n\r\n\r\n--XX'), MULTIPART],
  ];

  it.each(cases)('a body that %s is a 400 in the error envelope', async (_what, body, type) => {
    const res = await upload(body, type);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.details.errors.length).toBeGreaterThan(0);
    expect(res.body.trace_id).toBe(res.headers['x-trace-id']);
  });

  it('a file over MAX_BODY_BYTES that is also cut is a 413', async () => {
    const res = await upload(filePart(Buffer.alloc(5000, 1)).subarray(0, 4500));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('a well-formed upload after all of them is stored: the app serves on', async () => {
    const ok = await upload(Buffer.concat([filePart('fine'), end]));
    expect(ok.status).toBe(201);
    expect(ok.body.size).toBe(4);
  });
});
