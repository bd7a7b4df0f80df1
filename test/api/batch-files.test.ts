/**
 * Batch file uploads (POST /v1/files, docs/batches.md): streamed to storage with busboy, every failure of the body a
 * 4xx and nothing stored, never an unhandled stream 'error'; batch files scoped like the history.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { waitFor } from '../helpers/until';
import { AppError } from '../../shared/errors/app-error';
import type { Principal } from '../../shared/auth/principal';

let h: TestApp;
let home: string;
let auth: { Authorization: string };
let otherAuth: { Authorization: string };
let organizationId: string;
let ownerToken: string;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-batch-files-'));
  h = await createTestApp({ env: { SWITCHYARD_HOME: home } });
  const org = await seedOrg(h.t.db, { balance: '10' });
  organizationId = org.organizationId;
  ownerToken = org.ownerToken;
  auth = { Authorization: `Bearer ${(await seedKey(org.accounts, org.organizationId, { name: 'a' })).key}` };
  otherAuth = { Authorization: `Bearer ${(await seedKey(org.accounts, org.organizationId, { name: 'b' })).key}` };
});
afterAll(async () => {
  await h.close();
  fs.rmSync(home, { recursive: true, force: true });
});

const line = (i: number) => JSON.stringify({ custom_id: `r${i}`, method: 'POST', url: '/v1/embeddings', body: { model: 'm', input: 'x' } });
const stored = () => (fs.existsSync(path.join(home, 'files')) ? fs.readdirSync(path.join(home, 'files')) : []);
const records = () => h.t.db.batchFile.count();

describe('POST /v1/files (purpose batch)', () => {
  it('stores a JSONL upload and answers the OpenAI file object', async () => {
    const res = await request(h.app).post('/v1/files').set(auth).field('purpose', 'batch').attach('file', Buffer.from(`${line(1)}\n${line(2)}\n`), 'in.jsonl');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: 'file', purpose: 'batch', filename: 'in.jsonl', bytes: Buffer.byteLength(`${line(1)}\n${line(2)}\n`) });
    // Kept BATCH_FILE_RETENTION_DAYS (30 by default) after its creation.
    expect(res.body.expires_at).toBe(res.body.created_at + 30 * 86_400);
    const content = await request(h.app).get(`/v1/files/${res.body.id}/content`).set(auth);
    expect(content.text).toBe(`${line(1)}\n${line(2)}\n`);
  });

  it('refuses what is not a batch upload with 400 and keeps nothing', async () => {
    const files = stored().length;
    const n = await records();
    // No purpose (the file arrives first: it is stored, then deleted).
    expect((await request(h.app).post('/v1/files').set(auth).attach('file', Buffer.from(line(1)), 'in.jsonl')).status).toBe(400);
    // Another purpose.
    expect((await request(h.app).post('/v1/files').set(auth).attach('file', Buffer.from(line(1)), 'in.jsonl').field('purpose', 'fine-tune')).status).toBe(400);
    // No file, an empty file, not multipart.
    expect((await request(h.app).post('/v1/files').set(auth).field('purpose', 'batch')).status).toBe(400);
    expect((await request(h.app).post('/v1/files').set(auth).field('purpose', 'batch').attach('file', Buffer.from('\n\n'), 'in.jsonl')).status).toBe(400);
    expect((await request(h.app).post('/v1/files').set(auth).set('Content-Type', 'application/jsonl').send(line(1))).status).toBe(400);
    expect(stored().length).toBe(files);
    expect(await records()).toBe(n);
  });

  it('refuses more than 50,000 lines with 400, having streamed them, and stores nothing', async () => {
    const files = stored().length;
    const many = Array.from({ length: 50_001 }, () => '{}').join('\n');
    const res = await request(h.app).post('/v1/files').set(auth).field('purpose', 'batch').attach('file', Buffer.from(many), 'many.jsonl');
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain('50000 lines');
    expect(stored().length).toBe(files);
  });

  it('answers 400 for a malformed multipart body, and a truncated one', async () => {
    const boundary = 'xyz';
    const broken = await request(h.app).post('/v1/files').set(auth).set('Content-Type', `multipart/form-data; boundary=${boundary}`).send(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\n\r\n${line(1)}`);
    expect(broken.status).toBe(400);
    const noBoundary = await request(h.app).post('/v1/files').set(auth).set('Content-Type', 'multipart/form-data').send('garbage');
    expect(noBoundary.status).toBe(400);
  });

  it('survives a client that leaves mid-upload: nothing stored, the next upload served', async () => {
    const files = stored().length;
    const server = h.app.listen(0);
    const port = (server.address() as net.AddressInfo).port;
    const sock = await new Promise<net.Socket>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => {
        const body = `--b\r\nContent-Disposition: form-data; name="file"; filename="a.jsonl"\r\nContent-Type: application/jsonl\r\n\r\n${line(1)}\n`;
        c.write(`POST /v1/files HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth.Authorization}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n${body}`);
        resolve(c);
      });
    });
    // It leaves while its file is being written (a temporary file, renamed into place only when whole) ...
    const writing = () => stored().some((f) => f.startsWith('.tmp'));
    await waitFor('the upload to be written', writing);
    sock.destroy();
    // ... and the server drops that file.
    await waitFor('the partial file dropped', () => !writing());
    server.close();
    expect(stored().filter((f) => !f.startsWith('.tmp')).length).toBe(files);
    expect((await request(h.app).post('/v1/files').set(auth).field('purpose', 'batch').attach('file', Buffer.from(line(3)), 'in.jsonl')).status).toBe(200);
  });

  it('stops an upload past its byte limit with 413 (the 100 MiB of the route, lowered here)', async () => {
    const p: Principal = { kind: 'key', organizationId, keyId: 'k', userId: null, allowedModels: [], rateLimitPerMinute: null };
    const body = new PassThrough();
    const upload = h.app.locals.ctx.batchFiles.upload(p, 'big.jsonl', body, { lines: 50_000, bytes: 1000 });
    for (let i = 0; i < 100; i++) body.write(`${line(i)}\n`);
    body.end();
    await expect(upload).rejects.toMatchObject({ status: 413 } as Partial<AppError>);
  });

  it('scopes batch files like the history: another key of the organization sees none of them, the owner all', async () => {
    const res = await request(h.app).post('/v1/files').set(auth).field('purpose', 'batch').attach('file', Buffer.from(line(1)), 'mine.jsonl');
    const id = res.body.id;
    expect((await request(h.app).get(`/v1/files/${id}`).set(otherAuth)).status).toBe(404);
    expect((await request(h.app).get(`/v1/files/${id}/content`).set(otherAuth)).status).toBe(404);
    expect((await request(h.app).get('/v1/files').set(otherAuth)).body.data.map((f: { id: string }) => f.id)).not.toContain(id);
    expect((await request(h.app).get(`/v1/files/${id}`).set({ Authorization: `Bearer ${ownerToken}` })).status).toBe(200);
    expect((await request(h.app).get('/v1/storage/files').set(auth)).body.data.map((f: { id: string }) => f.id)).not.toContain(id);
  });
});
