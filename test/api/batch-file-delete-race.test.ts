/**
 * A batch's input deleted while the batch is being created (docs/batches.md "Files"; issue 38 item 8: both answered
 * 200 in 3 of 8 tries, and the batch failed `invalid_file`). The delete and the create exclude each other on the
 * file's row: whichever holds it first wins, the other answers as if it came after. Each order is forced: the delete
 * held inside its store call, or the create held before its insert (a lock on the batches table), while the other is
 * sent; the test waits until PostgreSQL shows it waiting on a lock (or answering, on code without the exclusion).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { LocalBlobStore } from '../../shared/storage/local-blob-store';
import type { BlobStore } from '../../shared/storage/blob-store';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { waitUntil } from '../helpers/until';

let h: TestApp;
let dir: string;
let inner: LocalBlobStore;
let auth: { Authorization: string };
/** A store whose delete of `held.key` waits at the gate. */
let held: { key: string; entered: () => void; gate: Promise<void> } | null = null;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-delete-race-'));
  inner = new LocalBlobStore(dir);
  const store: BlobStore = {
    put: (key, body, type) => inner.put(key, body, type),
    get: (...a) => inner.get(...a),
    async delete(key) {
      if (held?.key === key) {
        held.entered();
        await held.gate;
      }
      return inner.delete(key);
    },
  };
  h = await createTestApp({ env: { SWITCHYARD_HOME: dir }, deps: { blobStore: store } });
  const org = await seedOrg(h.t.db, { balance: '10' });
  auth = { Authorization: `Bearer ${(await seedKey(org.accounts, org.organizationId, { name: 'a' })).key}` };
});
afterAll(async () => {
  await h.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function upload(): Promise<string> {
  const body = JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] } });
  const r = await request(h.app).post('/v1/files').set(auth).field('purpose', 'batch').attach('file', Buffer.from(body), 'in.jsonl');
  expect(r.status).toBe(200);
  return r.body.id as string;
}

const create = (fileId: string) => request(h.app).post('/v1/batches').set(auth).send({ input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }).then((r) => r);
const remove = (fileId: string) => request(h.app).delete(`/v1/files/${fileId}`).set(auth).then((r) => r);

/** Sessions of the test database waiting on a lock. */
const lockWaiters = async () => (await h.t.db.$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)[0]!.n;

/** Resolves once `n` sessions wait on a lock, or `settled` has answered (code without the exclusion never waits). */
async function waitingOrAnswered(n: number, settled: Promise<unknown>): Promise<void> {
  let answered = false;
  void settled.then(() => (answered = true));
  await waitUntil(async () => (answered || (await lockWaiters()) >= n ? true : undefined), 10_000);
}

it('a delete that holds the file first: the create waits for it and answers 400 (no batch on a deleted file), the delete 200', async () => {
  const fileId = await upload();
  let entered!: () => void;
  const inside = new Promise<void>((r) => (entered = r));
  let release!: () => void;
  held = { key: fileId, entered, gate: new Promise<void>((r) => (release = r)) };
  try {
    const deleting = remove(fileId);
    await inside; // the delete is in its store call, its transaction holding the file's row
    const creating = create(fileId);
    await waitingOrAnswered(1, creating);
    release();
    expect((await deleting).status).toBe(200);
    const created = await creating;
    expect([created.status, created.body.error?.message]).toEqual([400, `Input file ${fileId} not found`]);
    expect(await h.t.db.batch.count({ where: { inputFileId: fileId } })).toBe(0);
  } finally {
    held = null;
  }
});

it('a create that holds the file first: the delete waits for the batch and answers 409, the batch is created on its file', async () => {
  const fileId = await upload();
  // The create is held between its lock of the file's row and its insert: the batches table locked against inserts.
  const blocker = await h.t.pool.connect();
  try {
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE batches IN SHARE MODE');
    const creating = create(fileId);
    await waitingOrAnswered(1, creating);
    const deleting = remove(fileId);
    await waitingOrAnswered(2, deleting);
    await blocker.query('COMMIT');
    const created = await creating;
    expect(created.status).toBe(200);
    const deleted = await deleting;
    expect([deleted.status, deleted.body.error?.code]).toEqual([409, 'CONFLICT']);
    expect((await request(h.app).get(`/v1/files/${fileId}`).set(auth)).status).toBe(200);
    expect(await inner.get(fileId)).not.toBeNull();
  } finally {
    await blocker.query('ROLLBACK').catch(() => undefined);
    blocker.release();
  }
});
