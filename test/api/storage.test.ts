import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { Queue, UnrecoverableError, type Job } from 'bullmq';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { LocalBlobStore } from '../../shared/storage/local-blob-store';
import { FilesService, type StoredFileView } from '../../shared/services/files.service';
import { maintenanceProcessor, scheduleMaintenance } from '../../workers/processors/maintenance.processor';
import { createLogger } from '../../shared/logger';

const BASE = 'https://files.example.test';
const HOUR = 3600_000;

let h: TestApp;
let root: string;
let org: Awaited<ReturnType<typeof seedOrg>>;
let admin: { userId: string; token: string };
let member: { userId: string; token: string };
let memberKey: { id: string; key: string };
let orgKey: { id: string; key: string };
let stranger: Awaited<ReturnType<typeof seedOrg>>;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-storage-'));
  h = await createTestApp({ deps: { authCacheMs: 0, blobStore: new LocalBlobStore(root) }, env: { PUBLIC_BASE_URL: `${BASE}/` } });
  org = await seedOrg(h.t.db);
  admin = await org.accounts.createUser({ organizationId: org.organizationId, email: 'admin@acme.test', role: 'admin' });
  member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@acme.test', role: 'member' });
  memberKey = await seedKey(org.accounts, org.organizationId, { userId: member.userId, name: 'member key' });
  orgKey = await seedKey(org.accounts, org.organizationId, { name: 'org key' });
  stranger = await seedOrg(h.t.db);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });
const bytes = (n: number) => randomBytes(n);
const onDisk = (id: string) => fs.existsSync(path.join(root, id));
/** Reads any reply body as raw bytes (superagent only buffers some types by itself). */
const binary = (res: request.Response, cb: (err: Error | null, body: Buffer) => void) => {
  // In Node, superagent hands the parser the raw IncomingMessage.
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => cb(null, Buffer.concat(chunks)));
};
/** The path and query of an absolute file URL, to fetch it from the app under test. */
const local = (url: string) => {
  const u = new URL(url);
  return u.pathname + u.search;
};
const fetchContent = (url: string) => request(h.app).get(local(url)).buffer(true).parse(binary);

function uploadRaw(token: string, type: string, body: Buffer, query = '') {
  return request(h.app).post(`/v1/storage/files${query}`).set(bearer(token)).set('Content-Type', type).send(body);
}

describe('upload', () => {
  it('stores a raw image/png body as a TEMP_UPLOAD user upload that expires after 24 hours', async () => {
    const png = bytes(321);
    const res = await uploadRaw(org.ownerToken, 'image/png', png);
    expect(res.status).toBe(201);
    const f = res.body as StoredFileView;
    expect(f).toEqual({
      id: expect.stringMatching(/^file_/),
      fileType: 'IMAGE',
      mimeType: 'image/png',
      source: 'USER_UPLOAD',
      storagePolicy: 'TEMP_UPLOAD',
      url: expect.stringMatching(new RegExp(`^${BASE}/v1/files/${f.id}/content\\?exp=\\d+&sig=[A-Za-z0-9_-]{43}$`)),
      size: 321,
      createdAt: expect.any(String),
      updatedAt: f.createdAt,
      externalUserId: null,
      expiresAt: new Date(Date.parse(f.createdAt) + 24 * HOUR).toISOString(),
    });
    expect(onDisk(f.id)).toBe(true);
    const content = await fetchContent(f.url);
    expect(content.status).toBe(200);
    expect(content.headers['content-type']).toBe('image/png');
    expect(content.headers['content-length']).toBe('321');
    expect(content.body).toEqual(png);
  });

  it('stores a multipart video/mp4 from the field "file" with the policy and externalUserId fields', async () => {
    const mp4 = bytes(2048);
    const res = await request(h.app)
      .post('/v1/storage/files')
      .set(bearer(org.ownerToken))
      .field('storagePolicy', 'PERMANENT')
      .field('externalUserId', 'user-42')
      .attach('file', mp4, { filename: 'clip.mp4', contentType: 'video/mp4' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ fileType: 'VIDEO', mimeType: 'video/mp4', source: 'USER_UPLOAD', storagePolicy: 'PERMANENT', size: 2048, externalUserId: 'user-42', expiresAt: null });
    expect((await fetchContent(res.body.url)).body).toEqual(mp4);
  });

  it('stores raw and multipart audio/mpeg, options of a raw upload in the query', async () => {
    const raw = await uploadRaw(memberKey.key, 'audio/mpeg; charset=binary', bytes(10), '?externalUserId=ext-1&storagePolicy=PERMANENT');
    expect(raw.status).toBe(201);
    expect(raw.body).toMatchObject({ fileType: 'AUDIO', mimeType: 'audio/mpeg', externalUserId: 'ext-1', storagePolicy: 'PERMANENT', expiresAt: null });
    const multi = await request(h.app).post('/v1/storage/files').set(bearer(memberKey.key)).attach('file', bytes(12), { filename: 'a.mp3', contentType: 'audio/mpeg' });
    expect(multi.status).toBe(201);
    expect(multi.body).toMatchObject({ fileType: 'AUDIO', size: 12, storagePolicy: 'TEMP_UPLOAD' });
  });

  it.each([['text/plain'], ['application/json'], ['application/octet-stream'], ['image/svg+xml'], ['']])('refuses a raw %j body with 400', async (type) => {
    const req = request(h.app).post('/v1/storage/files').set(bearer(org.ownerToken));
    const res = await (type ? req.set('Content-Type', type).send(type === 'application/json' ? '{"a":1}' : 'hello') : req.send(Buffer.from('x')));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.details.errors[0].path).toBe('/file');
  });

  it('refuses a multipart text/plain file, a missing "file" field, an empty file and bad options with 400', async () => {
    const post = () => request(h.app).post('/v1/storage/files').set(bearer(org.ownerToken));
    const cases = [
      post().attach('file', Buffer.from('hello'), { filename: 'a.txt', contentType: 'text/plain' }),
      post().attach('upload', bytes(5), { filename: 'a.png', contentType: 'image/png' }),
      post().field('storagePolicy', 'PERMANENT'),
      post().set('Content-Type', 'image/png').send(Buffer.alloc(0)),
      post().field('storagePolicy', 'FOREVER').attach('file', bytes(5), { filename: 'a.png', contentType: 'image/png' }),
      post().field('storagePolicy', 'TEMP_GENERATION').attach('file', bytes(5), { filename: 'a.png', contentType: 'image/png' }),
      post().field('externalUserId', 'x'.repeat(129)).attach('file', bytes(5), { filename: 'a.png', contentType: 'image/png' }),
      uploadRaw(org.ownerToken, 'image/png', bytes(5), '?storagePolicy=nope'),
    ];
    for (const c of cases) {
      const res = await c;
      expect(res.status).toBe(400);
      expect(res.body.error.details.errors.length).toBeGreaterThan(0);
    }
  });

  it('answers 413 for a file over MAX_BODY_BYTES, raw or multipart, and 401 without a key', async () => {
    const small = await createTestApp({ env: { MAX_BODY_BYTES: '1000' }, deps: { blobStore: new LocalBlobStore(path.join(root, 'small')) } });
    try {
      const o = await seedOrg(small.t.db);
      const raw = await request(small.app).post('/v1/storage/files').set(bearer(o.ownerToken)).set('Content-Type', 'image/png').send(bytes(1001));
      expect(raw.status).toBe(413);
      expect(raw.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      const multi = await request(small.app).post('/v1/storage/files').set(bearer(o.ownerToken)).attach('file', bytes(1001), { filename: 'a.png', contentType: 'image/png' });
      expect(multi.status).toBe(413);
      expect((await request(small.app).post('/v1/storage/files').set('Content-Type', 'image/png').send(bytes(3))).status).toBe(401);
    } finally {
      await small.close();
    }
  });
});

describe('listing', () => {
  /** Five live files with distinct creation times, owners and sizes, and one expired file. */
  let f: Record<'ownerImg' | 'keyVideo' | 'memberAudio' | 'orgKeyImg' | 'adminImg' | 'expired', StoredFileView>;
  let lister: TestApp;

  beforeAll(async () => {
    // Its own app and organization: the listing must see exactly these files.
    lister = await createTestApp({ deps: { authCacheMs: 0, blobStore: new LocalBlobStore(path.join(root, 'lister')) } });
    const files = lister.app.locals.ctx.files;
    const o = await seedOrg(lister.t.db);
    const adm = await o.accounts.createUser({ organizationId: o.organizationId, email: 'a@x.test', role: 'admin' });
    const mem = await o.accounts.createUser({ organizationId: o.organizationId, email: 'm@x.test', role: 'member' });
    const memKey = await seedKey(o.accounts, o.organizationId, { userId: mem.userId });
    const oKey = await seedKey(o.accounts, o.organizationId);
    const base = { organizationId: o.organizationId };
    f = {
      ownerImg: await files.saveUpload({ ...base, userId: o.ownerUserId, apiKeyId: null, bytes: bytes(100), mimeType: 'image/png', externalUserId: 'alice' }),
      keyVideo: await files.saveGenerated({ ...base, userId: mem.userId, apiKeyId: memKey.id, generationId: 'gen_1', bytes: bytes(300), mimeType: 'video/mp4', externalUserId: 'bob' }),
      memberAudio: await files.saveUpload({ ...base, userId: mem.userId, apiKeyId: null, bytes: bytes(200), mimeType: 'audio/mpeg', storagePolicy: 'PERMANENT' }),
      orgKeyImg: await files.saveGenerated({ ...base, userId: null, apiKeyId: oKey.id, generationId: 'gen_2', bytes: bytes(50), mimeType: 'image/webp', externalUserId: 'alice' }),
      adminImg: await files.saveUpload({ ...base, userId: adm.userId, apiKeyId: null, bytes: bytes(400), mimeType: 'image/jpeg', storagePolicy: 'PERMANENT', externalUserId: 'carol' }),
      expired: await files.saveUpload({ ...base, userId: o.ownerUserId, apiKeyId: null, bytes: bytes(1), mimeType: 'image/gif' }),
    };
    const t0 = Date.now() - 10 * HOUR;
    const order = ['ownerImg', 'keyVideo', 'memberAudio', 'orgKeyImg', 'adminImg'] as const;
    for (const [i, k] of order.entries()) {
      await lister.t.db.storedFile.update({ where: { id: f[k].id }, data: { createdAt: new Date(t0 + i * HOUR) } });
    }
    await lister.t.db.storedFile.update({ where: { id: f.expired.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    Object.assign(tokens, { owner: o.ownerToken, admin: adm.token, member: mem.token, memberKey: memKey.key, orgKey: oKey.key });
  });
  afterAll(() => lister.close());

  const tokens = { owner: '', admin: '', member: '', memberKey: '', orgKey: '' };
  const list = (who: keyof typeof tokens, query = '') => request(lister.app).get(`/v1/storage/files${query}`).set(bearer(tokens[who]));
  const ids = (res: request.Response) => (res.body.data as StoredFileView[]).map((x) => Object.entries(f).find(([, v]) => v.id === x.id)?.[0] ?? x.id);

  it('answers the object form, newest first, without expired files', async () => {
    const res = await list('owner');
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual(['adminImg', 'orgKeyImg', 'memberAudio', 'keyVideo', 'ownerImg']);
    expect(res.body.meta).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1 });
    expect(res.body.data[0]).toEqual({ ...f.adminImg, createdAt: expect.any(String), url: expect.stringContaining(`/v1/files/${f.adminImg.id}/content?exp=`) });
    expect(res.body.data.find((x: StoredFileView) => x.id === f.keyVideo.id)).toMatchObject({ source: 'AI_GENERATION', storagePolicy: 'TEMP_GENERATION' });
  });

  it.each([
    ['?fileType=IMAGE', ['adminImg', 'orgKeyImg', 'ownerImg']],
    ['?fileType=VIDEO', ['keyVideo']],
    ['?fileType=AUDIO', ['memberAudio']],
    ['?source=AI_GENERATION', ['orgKeyImg', 'keyVideo']],
    ['?source=USER_UPLOAD', ['adminImg', 'memberAudio', 'ownerImg']],
    ['?storagePolicy=PERMANENT', ['adminImg', 'memberAudio']],
    ['?storagePolicy=TEMP_GENERATION', ['orgKeyImg', 'keyVideo']],
    ['?storagePolicy=TEMP_UPLOAD', ['ownerImg']],
    ['?externalUserId=alice', ['orgKeyImg', 'ownerImg']],
    ['?externalUserId=alice&fileType=IMAGE&source=USER_UPLOAD', ['ownerImg']],
    ['?sortOrder=asc', ['ownerImg', 'keyVideo', 'memberAudio', 'orgKeyImg', 'adminImg']],
    ['?sortBy=size&sortOrder=asc', ['orgKeyImg', 'ownerImg', 'memberAudio', 'keyVideo', 'adminImg']],
    ['?sortBy=size', ['adminImg', 'keyVideo', 'memberAudio', 'ownerImg', 'orgKeyImg']],
    // Files without expiry (PERMANENT) and without externalUserId come last in both orders.
    ['?sortBy=expiresAt&sortOrder=asc', ['ownerImg', 'keyVideo', 'orgKeyImg', 'memberAudio', 'adminImg']],
    ['?sortBy=expiresAt&sortOrder=desc', ['orgKeyImg', 'keyVideo', 'ownerImg', 'adminImg', 'memberAudio']],
    ['?sortBy=externalUserId&sortOrder=asc', ['ownerImg', 'orgKeyImg', 'keyVideo', 'adminImg', 'memberAudio']],
    ['?sortBy=externalUserId&sortOrder=desc', ['adminImg', 'keyVideo', 'orgKeyImg', 'ownerImg', 'memberAudio']],
    ['?externalUserId=' + 'x'.repeat(128), []],
  ])('%s lists %j', async (query, expected) => {
    const res = await list('owner', query);
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual(expected);
    expect(res.body.meta.total).toBe(expected.length);
  });

  it('pages with page and limit', async () => {
    const p2 = await list('owner', '?limit=2&page=2');
    expect(ids(p2)).toEqual(['memberAudio', 'keyVideo']);
    expect(p2.body.meta).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3 });
    const p3 = await list('owner', '?limit=2&page=3');
    expect(ids(p3)).toEqual(['ownerImg']);
    const past = await list('owner', '?limit=2&page=9');
    expect(past.body).toEqual({ data: [], meta: { page: 9, limit: 2, total: 5, totalPages: 3 } });
    expect((await list('owner', '?limit=100')).body.meta.limit).toBe(100);
    expect((await list('owner', '?limit=1')).body.data).toHaveLength(1);
  });

  it.each([
    ['?page=0', '/page'],
    ['?page=-1', '/page'],
    ['?page=1.5', '/page'],
    ['?page=abc', '/page'],
    ['?limit=0', '/limit'],
    ['?limit=101', '/limit'],
    ['?limit=ten', '/limit'],
    ['?fileType=DOCUMENT', '/fileType'],
    ['?fileType=image', '/fileType'],
    ['?source=UPLOAD', '/source'],
    ['?storagePolicy=FOREVER', '/storagePolicy'],
    ['?externalUserId=' + 'x'.repeat(129), '/externalUserId'],
    ['?externalUserId=', '/externalUserId'],
    ['?sortBy=name', '/sortBy'],
    ['?sortOrder=up', '/sortOrder'],
    ['?scope=everyone', '/scope'],
    ['?page=1&page=2', '/page'],
  ])('%s is 400 naming %s', async (query, field) => {
    const res = await list('owner', query);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.details.errors.map((e: { path: string }) => e.path)).toContain(field);
  });

  it.each([
    ['owner', 'all', ['adminImg', 'orgKeyImg', 'memberAudio', 'keyVideo', 'ownerImg']],
    ['owner', 'mine', ['ownerImg']],
    ['owner', 'others', ['adminImg', 'orgKeyImg', 'memberAudio', 'keyVideo']],
    ['admin', 'mine', ['adminImg']],
    ['admin', 'others', ['orgKeyImg', 'memberAudio', 'keyVideo', 'ownerImg']],
    ['member', 'all', ['adminImg', 'orgKeyImg', 'memberAudio', 'keyVideo', 'ownerImg']],
    // A member's own files include those made through its keys.
    ['member', 'mine', ['memberAudio', 'keyVideo']],
    ['memberKey', 'all', ['adminImg', 'orgKeyImg', 'memberAudio', 'keyVideo', 'ownerImg']],
    // A key's own files are those made through that key.
    ['memberKey', 'mine', ['keyVideo']],
    ['orgKey', 'mine', ['orgKeyImg']],
  ] as const)('%s with scope=%s sees %j', async (who, scope, expected) => {
    const res = await list(who, `?scope=${scope}`);
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual(expected);
  });

  it.each([['member'], ['memberKey'], ['orgKey']] as const)('refuses scope=others to %s with 403', async (who) => {
    const res = await list(who, '?scope=others');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });

  it('shows nothing of another organization, and needs a key', async () => {
    const o = await seedOrg(lister.t.db);
    expect((await request(lister.app).get('/v1/storage/files').set(bearer(o.ownerToken))).body.meta.total).toBe(0);
    expect((await request(lister.app).get('/v1/storage/files')).status).toBe(401);
  });
});

describe('one file: get, patch, delete', () => {
  let file: StoredFileView;
  beforeEach(async () => {
    file = (await uploadRaw(member.token, 'image/png', bytes(64))).body;
  });

  it('gets a file of the organization; 404 for another organization and unknown ids', async () => {
    const res = await request(h.app).get(`/v1/storage/files/${file.id}`).set(bearer(orgKey.key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual(file);
    expect((await request(h.app).get(`/v1/storage/files/${file.id}`).set(bearer(stranger.ownerToken))).status).toBe(404);
    const missing = await request(h.app).get('/v1/storage/files/file_nope').set(bearer(org.ownerToken));
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });

  it('patches externalUserId and storagePolicy; a new policy recomputes expiresAt from createdAt', async () => {
    const patch = (body: object, token = member.token) => request(h.app).patch(`/v1/storage/files/${file.id}`).set(bearer(token)).send(body);
    const created = Date.parse(file.createdAt);
    let res = await patch({ externalUserId: 'ext-9' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ externalUserId: 'ext-9', storagePolicy: 'TEMP_UPLOAD', expiresAt: file.expiresAt });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(created);
    res = await patch({ storagePolicy: 'PERMANENT' });
    expect(res.body).toMatchObject({ storagePolicy: 'PERMANENT', expiresAt: null, externalUserId: 'ext-9' });
    res = await patch({ storagePolicy: 'TEMP_GENERATION', externalUserId: null }, org.ownerToken);
    expect(res.body).toMatchObject({ storagePolicy: 'TEMP_GENERATION', externalUserId: null, expiresAt: new Date(created + 7 * 24 * HOUR).toISOString() });
    expect(res.body.createdAt).toBe(file.createdAt);
    expect((await request(h.app).get(`/v1/storage/files/${file.id}`).set(bearer(admin.token))).body).toEqual(res.body);
  });

  it.each([
    [{}, '/'],
    [{ storagePolicy: 'FOREVER' }, '/storagePolicy'],
    [{ externalUserId: 'x'.repeat(129) }, '/externalUserId'],
    [{ externalUserId: 5 }, '/externalUserId'],
    [{ size: 1 }, '/size'],
  ])('refuses the patch %j with 400', async (body, field) => {
    const res = await request(h.app).patch(`/v1/storage/files/${file.id}`).set(bearer(member.token)).send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.details.errors.map((e: { path: string }) => e.path)).toContain(field);
  });

  it('lets only owners, admins and the file own creator change it', async () => {
    const other = await org.accounts.createUser({ organizationId: org.organizationId, email: `m${Date.now()}@acme.test`, role: 'member' });
    for (const t of [other.token, orgKey.key, memberKey.key]) {
      expect((await request(h.app).patch(`/v1/storage/files/${file.id}`).set(bearer(t)).send({ externalUserId: 'x' })).status).toBe(403);
      expect((await request(h.app).delete(`/v1/storage/files/${file.id}`).set(bearer(t))).status).toBe(403);
    }
    expect((await request(h.app).patch(`/v1/storage/files/${file.id}`).set(bearer(admin.token)).send({ externalUserId: 'x' })).status).toBe(200);
    const keyFile = (await uploadRaw(orgKey.key, 'image/png', bytes(3))).body as StoredFileView;
    expect((await request(h.app).patch(`/v1/storage/files/${keyFile.id}`).set(bearer(orgKey.key)).send({ externalUserId: 'k' })).status).toBe(200);
    expect((await request(h.app).delete(`/v1/storage/files/${keyFile.id}`).set(bearer(orgKey.key))).status).toBe(200);
  });

  it('deletes the record and the bytes; a second delete is 404 and the URL stops working', async () => {
    expect(onDisk(file.id)).toBe(true);
    const res = await request(h.app).delete(`/v1/storage/files/${file.id}`).set(bearer(member.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect(onDisk(file.id)).toBe(false);
    expect(await h.t.db.storedFile.findUnique({ where: { id: file.id } })).toBeNull();
    const again = await request(h.app).delete(`/v1/storage/files/${file.id}`).set(bearer(member.token));
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('NOT_FOUND');
    expect((await request(h.app).get(`/v1/storage/files/${file.id}`).set(bearer(member.token))).status).toBe(404);
    expect((await fetchContent(file.url)).status).toBe(404);
  });

  it('does not delete a file of another organization', async () => {
    expect((await request(h.app).delete(`/v1/storage/files/${file.id}`).set(bearer(stranger.ownerToken))).status).toBe(404);
    expect(onDisk(file.id)).toBe(true);
  });
});

describe('file content URL', () => {
  let video: StoredFileView;
  let mp4: Buffer;
  beforeAll(async () => {
    mp4 = bytes(10_000);
    video = (await uploadRaw(org.ownerToken, 'video/mp4', mp4)).body;
  });

  it('serves the whole file with its type, length and Accept-Ranges', async () => {
    const res = await fetchContent(video.url);
    expect(res.status).toBe(200);
    expect(res.headers).toMatchObject({ 'content-type': 'video/mp4', 'content-length': '10000', 'accept-ranges': 'bytes', 'x-content-type-options': 'nosniff' });
    expect(res.body).toEqual(mp4);
  });

  it.each([
    ['bytes=0-99', 0, 99],
    ['bytes=9000-', 9000, 9999],
    ['bytes=-500', 9500, 9999],
    ['bytes=9990-20000', 9990, 9999],
  ])('serves %s as 206 with Content-Range', async (range, start, end) => {
    const res = await fetchContent(video.url).set('Range', range);
    expect(res.status).toBe(206);
    expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/10000`);
    expect(res.headers['content-length']).toBe(String(end - start + 1));
    expect(res.body).toEqual(mp4.subarray(start, end + 1));
  });

  it('answers 416 with Content-Range for an unsatisfiable range, and the whole file for a multi-range', async () => {
    const res = await fetchContent(video.url).set('Range', 'bytes=10000-');
    expect(res.status).toBe(416);
    expect(res.headers['content-range']).toBe('bytes */10000');
    expect(JSON.parse(res.body.toString()).error.code).toBe('BAD_REQUEST');
    const multi = await fetchContent(video.url).set('Range', 'bytes=0-1,5-6');
    expect(multi.status).toBe(200);
    expect(multi.body.length).toBe(10000);
  });

  it('answers HEAD with the headers only', async () => {
    const res = await request(h.app).head(local(video.url));
    expect(res.status).toBe(200);
    expect(res.headers['content-length']).toBe('10000');
  });

  it('refuses a wrong or borrowed signature with 404, and a missing one without Authorization with 401', async () => {
    const other = (await uploadRaw(org.ownerToken, 'image/png', bytes(5))).body as StoredFileView;
    const sigOf = (v: StoredFileView) => new URL(v.url).searchParams.get('sig')!;
    const tampered = sigOf(video).slice(0, -1) + (sigOf(video).endsWith('A') ? 'B' : 'A');
    for (const q of [`?sig=${tampered}`, `?sig=${sigOf(other)}`, '?sig=', '?sig=a&sig=b']) {
      const res = await request(h.app).get(`/v1/files/${video.id}/content${q}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    expect((await request(h.app).get(`/v1/files/${video.id}/content`)).status).toBe(401);
  });

  it('serves without a signature to an Authorization of the same organization only', async () => {
    const res = await request(h.app).get(`/v1/files/${video.id}/content`).set(bearer(memberKey.key)).buffer(true).parse(binary);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(mp4);
    expect((await request(h.app).get(`/v1/files/${video.id}/content`).set(bearer(stranger.ownerToken))).status).toBe(404);
  });

  it('stops serving a file once it has expired, before maintenance removes it', async () => {
    const f = (await uploadRaw(org.ownerToken, 'image/png', bytes(5))).body as StoredFileView;
    await h.t.db.storedFile.update({ where: { id: f.id }, data: { expiresAt: new Date(Date.now() - 1) } });
    expect((await fetchContent(f.url)).status).toBe(404);
    expect((await request(h.app).get(`/v1/storage/files/${f.id}`).set(bearer(org.ownerToken))).status).toBe(404);
  });
});

// Clocks in 2001: files of the other tests (expiring in the real future) are never due in these runs.
describe('retention', () => {
  it('deleteExpired removes expired files, bytes then record, in batches, by the injected clock', async () => {
    const t0 = new Date('2001-01-01T00:00:00Z');
    let now = t0;
    const dir = path.join(root, 'retention');
    const files = new FilesService({ db: h.t.db, store: new LocalBlobStore(dir), secret: 's', baseUrl: BASE, clock: () => now, batchSize: 2 });
    const base = { organizationId: stranger.organizationId, userId: stranger.ownerUserId, apiKeyId: null };
    const uploads = await Promise.all([1, 2, 3].map(() => files.saveUpload({ ...base, bytes: bytes(4), mimeType: 'image/png' })));
    const generated = await Promise.all([1, 2, 3].map((i) => files.saveGenerated({ ...base, generationId: `gen_${i}`, bytes: bytes(4), mimeType: 'video/mp4' })));
    const permanent = await files.saveUpload({ ...base, bytes: bytes(4), mimeType: 'audio/wav', storagePolicy: 'PERMANENT' });
    expect(generated[0].expiresAt).toBe('2001-01-08T00:00:00.000Z');
    expect(uploads[0].expiresAt).toBe('2001-01-02T00:00:00.000Z');

    expect(await files.deleteExpired(new Date(t0.getTime() + 24 * HOUR - 1))).toBe(0);
    now = new Date(t0.getTime() + 24 * HOUR);
    expect(await files.deleteExpired()).toBe(3);
    for (const u of uploads) {
      expect(fs.existsSync(path.join(dir, u.id))).toBe(false);
      expect(await h.t.db.storedFile.findUnique({ where: { id: u.id } })).toBeNull();
    }
    expect(fs.readdirSync(dir).sort()).toEqual([...generated.map((g) => g.id), permanent.id].sort());

    expect(await files.deleteExpired(new Date(t0.getTime() + 7 * 24 * HOUR))).toBe(3);
    expect(await files.deleteExpired(new Date(t0.getTime() + 3650 * 24 * HOUR))).toBe(0);
    expect(fs.readdirSync(dir)).toEqual([permanent.id]);
    expect(await h.t.db.storedFile.findUnique({ where: { id: permanent.id } })).not.toBeNull();
  });

  it('skips a file whose bytes cannot be removed and goes on with the rest', async () => {
    const dir = path.join(root, 'flaky');
    const store = new LocalBlobStore(dir);
    const failing = new Set<string>();
    const flaky = { put: store.put.bind(store), get: store.get.bind(store), delete: async (k: string) => (failing.has(k) ? Promise.reject(new Error('disk says no')) : store.delete(k)) };
    const errors: string[] = [];
    const t0 = new Date('2001-06-01T00:00:00Z');
    const files = new FilesService({ db: h.t.db, store: flaky, secret: 's', baseUrl: BASE, batchSize: 1, clock: () => t0, onError: (m) => errors.push(m) });
    const later = new Date(t0.getTime() + 25 * HOUR);
    const base = { organizationId: stranger.organizationId, userId: null, apiKeyId: null, mimeType: 'image/png' };
    const a = await files.saveUpload({ ...base, bytes: bytes(1) });
    const b = await files.saveUpload({ ...base, bytes: bytes(1) });
    failing.add(a.id);
    expect(await files.deleteExpired(later)).toBe(1);
    expect(errors).toEqual(['could not delete expired file bytes']);
    expect(await h.t.db.storedFile.findUnique({ where: { id: a.id } })).not.toBeNull();
    expect(await h.t.db.storedFile.findUnique({ where: { id: b.id } })).toBeNull();
    failing.clear();
    expect(await files.deleteExpired(later)).toBe(1);
  });

  it('the maintenance processor runs delete-expired-files and refuses unknown jobs', async () => {
    const files = h.app.locals.ctx.files;
    const f = await files.saveUpload({ organizationId: stranger.organizationId, userId: null, apiKeyId: null, bytes: bytes(2), mimeType: 'image/png' });
    const run = maintenanceProcessor({ files, clock: () => new Date(Date.now() + 25 * HOUR), logger: createLogger({ silent: true }) });
    expect(await run({ name: 'delete-expired-files' } as Job)).toEqual({ deleted: expect.any(Number) });
    expect(onDisk(f.id)).toBe(false);
    await expect(run({ name: 'something-else' } as Job)).rejects.toBeInstanceOf(UnrecoverableError);
  });

  it('scheduleMaintenance installs one repeatable delete-expired-files job every 15 minutes, and keep-partitions hourly', async () => {
    const queue = new Queue('maintenance', { connection: h.redis, prefix: h.prefix });
    try {
      await scheduleMaintenance(queue);
      await scheduleMaintenance(queue);
      const schedulers = (await queue.getJobSchedulers()).sort((x, y) => x.key.localeCompare(y.key));
      expect(schedulers).toHaveLength(2);
      expect(schedulers[0]).toMatchObject({ key: 'delete-expired-files', name: 'delete-expired-files', every: 15 * 60_000 });
      expect(schedulers[1]).toMatchObject({ key: 'keep-partitions', name: 'keep-partitions', every: 60 * 60_000 });
      const text = new Queue('text', { connection: h.redis, prefix: h.prefix });
      await expect(scheduleMaintenance(text)).rejects.toThrow('maintenance');
      await text.close();
    } finally {
      await queue.close();
    }
  });
});
