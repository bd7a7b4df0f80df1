/**
 * A batch's output and error files as a table of parts (docs/batches.md, "How a batch runs"): each commit of the
 * driver inserts its parts in its own transaction, under the batch row's version, so the parts of a run that lost to
 * another are never listed; a finished file's content is its parts in order. And the sweep of old batch files
 * (BATCH_FILE_RETENTION_DAYS): expired files hidden, then deleted with their objects, an input kept while a batch reads it.
 * And the parts a run wrote and never committed (killed in between): their writes' rows (batch_part_writes) let the
 * same sweep delete their objects an hour on, never a committed part's.
 */
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import request from 'supertest';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';
import { MAINTENANCE_JOBS, maintenanceProcessor } from '../../workers/processors/maintenance.processor';
import { BatchFiles, PART_WRITE_MAX_AGE_MS } from '../../shared/services/batch-files.service';
import type { Prisma } from '../../shared/db/generated/client';
import { loadConfig } from '../../shared/config/env';

let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  s = await createTestStack({ env: { BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '16' } });
  org = await s.seed({ balance: '1000' });
});
afterAll(() => s.close());
beforeEach(() => s.fake.reset());

const DAY = 86_400_000;
const chatLine = (i: number, model: string = STACK_MODELS.chat) =>
  JSON.stringify({ custom_id: `req-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: `line ${i}` }], max_tokens: 8 } });

async function upload(lines: string[]): Promise<string> {
  const res = await request(s.app).post('/v1/files').set(org.auth).field('purpose', 'batch').attach('file', Buffer.from(`${lines.join('\n')}\n`), 'in.jsonl');
  expect(res.status).toBe(200);
  return res.body.id as string;
}

async function runBatch(input: string): Promise<{ id: string; status: string; output_file_id: string | null; error_file_id: string | null; request_counts: { completed: number; failed: number } }> {
  const created = await request(s.app).post('/v1/batches').set(org.auth).send({ input_file_id: input, endpoint: '/v1/chat/completions', completion_window: '24h' });
  expect(created.status).toBe(200);
  return waitUntil(
    async () => {
      const b = (await request(s.app).get(`/v1/batches/${created.body.id}`).set(org.auth)).body;
      return ['completed', 'failed', 'expired', 'cancelled'].includes(b.status) ? b : undefined;
    },
    60_000,
  );
}

const content = async (fileId: string) => (await request(s.app).get(`/v1/files/${fileId}/content`).set(org.auth).buffer(true).parse((res, cb) => {
  const chunks: Buffer[] = [];
  res.on('data', (c: Buffer) => chunks.push(c));
  res.on('end', () => cb(null, Buffer.concat(chunks)));
})).body as Buffer;

async function blob(key: string): Promise<Buffer | null> {
  const b = await s.workerDeps.files.store.get(key);
  if (!b) return null;
  const chunks: Buffer[] = [];
  for await (const c of b.body as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

const customIds = (text: Buffer) => text.toString('utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { custom_id: string }).custom_id);

describe('the parts of a batch output', () => {
  it("a finished file's content is its parts in order; sizes and lines add up", async () => {
    s.fake.setKnobs({ latencyMs: 30 });
    // 60 lines, 16 in flight: several commits, each a part; the unknown model's lines are error lines.
    const input = await upload(Array.from({ length: 60 }, (_, i) => chatLine(i, i % 10 === 9 ? 'acme/no-such-model' : STACK_MODELS.chat)));
    const b = await runBatch(input);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toMatchObject({ completed: 54, failed: 6 });
    expect(await s.t.db.batchPartWrite.count({ where: { batchId: b.id } })).toBe(0);
    for (const [kind, fileId, lines] of [['output', b.output_file_id!, 54], ['error', b.error_file_id!, 6]] as const) {
      const parts = await s.t.db.batchPart.findMany({ where: { batchId: b.id, kind }, orderBy: { seq: 'asc' } });
      if (kind === 'output') expect(parts.length).toBeGreaterThan(2);
      const file = await s.t.db.batchFile.findUniqueOrThrow({ where: { id: fileId } });
      expect(file).toMatchObject({ batchId: b.id, kind, storageKey: parts[0]!.storageKey, lines });
      const joined = Buffer.concat(await Promise.all(parts.map(async (p) => (await blob(p.storageKey))!)));
      const served = await content(fileId);
      expect(served.equals(joined)).toBe(true);
      expect(BigInt(served.length)).toBe(file.bytes);
      expect(parts.reduce((n, p) => n + Number(p.bytes), 0)).toBe(served.length);
      expect(parts.reduce((n, p) => n + p.lines!, 0)).toBe(lines);
      expect(new Set(customIds(served)).size).toBe(lines);
    }
  });

  it('never lists the parts of a run that lost to another, and deletes their objects', async () => {
    s.fake.setKnobs({ latencyMs: 30 });
    const files = s.ctx.batchFiles;
    const put = files.putPart.bind(files);
    const lost: string[] = [];
    // Another run commits while this one writes its parts (the row's version moves on): this run's commit must lose.
    files.putPart = async (batchId: string, key: string, bytes: Buffer) => {
      await put(batchId, key, bytes);
      if (lost.length < 3 && key.includes('_o_')) {
        lost.push(key);
        await s.t.db.$executeRaw`UPDATE batches SET version = version + 1 WHERE id = ${batchId}`;
      }
    };
    try {
      const input = await upload(Array.from({ length: 40 }, (_, i) => chatLine(i)));
      const b = await runBatch(input);
      expect(b.status).toBe('completed');
      expect(lost).toHaveLength(3);
      const parts = await s.t.db.batchPart.findMany({ where: { batchId: b.id }, select: { storageKey: true } });
      for (const key of lost) {
        expect(parts.map((p) => p.storageKey)).not.toContain(key);
        expect(await blob(key)).toBeNull();
      }
      expect(await s.t.db.batchPartWrite.count({ where: { batchId: b.id } })).toBe(0);
      // The lines the lost runs answered were answered again by the next step: each once in the file.
      const ids = customIds(await content(b.output_file_id!));
      expect(ids.sort()).toEqual(Array.from({ length: 40 }, (_, i) => `req-${i}`).sort());
      expect(b.request_counts).toMatchObject({ completed: 40, failed: 0 });
    } finally {
      files.putPart = put;
    }
  });
});

describe('parts never committed: a run killed between its write and its commit', () => {
  const sweep = () => maintenanceProcessor(s.workerDeps)({ name: MAINTENANCE_JOBS.deleteExpiredFiles } as Job) as Promise<{ uncommittedParts: number }>;
  const ageWrite = (key: string, ms: number) => s.t.db.batchPartWrite.updateMany({ where: { storageKey: key }, data: { createdAt: new Date(Date.now() - ms) } });
  const writes = (key: string) => s.t.db.batchPartWrite.count({ where: { storageKey: key } });
  const line = JSON.stringify({ custom_id: 'req-1' });
  // The step's commit under the row's version (as the driver's): applies once per version.
  const bump = (id: string, version: number) => (tx: Prisma.TransactionClient) => tx.batch.updateMany({ where: { id, version }, data: { version: { increment: 1 } } });
  /** A batch in progress that nobody drives: the tests play its driver's steps. */
  async function idleBatch(): Promise<string> {
    const id = `batch_idle${randomBytes(6).toString('hex')}`;
    const data = { id, organizationId: org.organizationId, apiKeyId: org.key.id, principal: {}, endpoint: '/v1/chat/completions', inputFileId: await upload([chatLine(1)]) };
    await s.t.db.batch.create({ data: { ...data, completionWindow: '24h', status: 'in_progress', expiresAt: new Date(Date.now() + DAY) } });
    return id;
  }

  it('the sweep deletes the object an hour after its write, not before; a store that fails keeps the row for the next sweep', async () => {
    const id = await idleBatch();
    const part = (await s.ctx.batchFiles.writePart(id, 0, 'output', [line]))!;
    // The run dies here: its commit never comes.
    await sweep();
    await ageWrite(part.storageKey, PART_WRITE_MAX_AGE_MS - 60_000);
    await sweep();
    expect(await blob(part.storageKey)).not.toBeNull();
    expect(await writes(part.storageKey)).toBe(1);
    await ageWrite(part.storageKey, PART_WRITE_MAX_AGE_MS + 1000);
    const swept = await sweep();
    expect(await blob(part.storageKey)).toBeNull();
    expect(await writes(part.storageKey)).toBe(0);
    expect(swept.uncommittedParts).toBe(1);
    expect((await sweep()).uncommittedParts).toBe(0);

    const next = (await s.ctx.batchFiles.writePart(id, 0, 'error', [line]))!;
    await ageWrite(next.storageKey, PART_WRITE_MAX_AGE_MS + 1000);
    const store = s.workerDeps.files.store;
    const failing = new BatchFiles(s.t.db, { put: store.put.bind(store), get: store.get.bind(store), delete: () => Promise.reject(new Error('store down')) });
    expect(await failing.deleteUncommittedParts()).toBe(0);
    expect(await writes(next.storageKey)).toBe(1);
    expect((await sweep()).uncommittedParts).toBe(1);
    expect(await blob(next.storageKey)).toBeNull();
  });

  it('never touches a committed part; a commit that lost leaves no object and no row', async () => {
    const id = await idleBatch();
    const files = s.ctx.batchFiles;
    const won = (await files.writePart(id, 0, 'output', [line]))!;
    expect(await files.commitParts(id, 0, [won], bump(id, 0))).toBe(true);
    expect(await writes(won.storageKey)).toBe(0);
    // Another run that read version 0: its commit loses.
    const lost = (await files.writePart(id, 0, 'error', [line]))!;
    expect(await files.commitParts(id, 0, [lost], bump(id, 0))).toBe(false);
    expect(await blob(lost.storageKey)).toBeNull();
    expect(await writes(lost.storageKey)).toBe(0);
    // However late the sweep, the committed part stays listed and stored.
    expect(await files.deleteUncommittedParts(new Date(Date.now() + 365 * DAY))).toBe(0);
    expect(await blob(won.storageKey)).not.toBeNull();
    expect((await s.t.db.batchPart.findMany({ where: { batchId: id } })).map((p) => p.storageKey)).toEqual([won.storageKey]);
  });

  it('a commit late past the hour: the sweep skips a write a commit holds; a commit that waited on the sweep commits nothing', async () => {
    const id = await idleBatch();
    const files = s.ctx.batchFiles;
    const part = (await files.writePart(id, 0, 'output', [line]))!;
    await ageWrite(part.storageKey, PART_WRITE_MAX_AGE_MS + 1000);
    // A transaction holding the row (as a commit under way does): the sweep leaves it to that transaction.
    await s.t.db.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM batch_part_writes WHERE storage_key = ${part.storageKey} FOR UPDATE`;
      expect(await files.deleteUncommittedParts()).toBe(0);
    });
    expect(await blob(part.storageKey)).not.toBeNull();

    // The sweep holds the row while the store deletes the object; the commit that comes meanwhile waits, then finds
    // the row gone: the batch's row is not updated and the part is never listed.
    const store = s.workerDeps.files.store;
    let entered!: () => void;
    let release!: () => void;
    const deleting = new Promise<void>((r) => (entered = r));
    const gate = new Promise<void>((r) => (release = r));
    const slow = new BatchFiles(s.t.db, { put: store.put.bind(store), get: store.get.bind(store), delete: async (k) => (entered(), await gate, store.delete(k)) });
    const sweeping = slow.deleteUncommittedParts();
    await deleting;
    const committing = files.commitParts(id, 0, [part], bump(id, 0));
    // The commit waits for the row the sweep holds (PostgreSQL shows a backend waiting for a lock).
    await waitUntil(async () => ((await s.t.db.$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)[0]!.n > 0 ? true : undefined));
    release();
    expect(await sweeping).toBe(1);
    expect(await committing).toBe(false);
    expect(await blob(part.storageKey)).toBeNull();
    expect(await s.t.db.batch.findUniqueOrThrow({ where: { id } })).toMatchObject({ version: 0 });
    expect(await s.t.db.batchPart.count({ where: { batchId: id } })).toBe(0);
    expect(await writes(part.storageKey)).toBe(0);
  });
});

describe('old batch files (BATCH_FILE_RETENTION_DAYS, default 30)', () => {
  const sweep = () => maintenanceProcessor(s.workerDeps)({ name: MAINTENANCE_JOBS.deleteExpiredFiles } as Job) as Promise<{ batchFiles: number }>;
  const age = (ids: string[], days: number) => s.t.db.batchFile.updateMany({ where: { id: { in: ids } }, data: { createdAt: new Date(Date.now() - days * DAY) } });

  it('shows expires_at 30 days after creation; once past, hides the file and the sweep deletes it and its objects, but not an input a batch still reads', async () => {
    s.fake.setKnobs({ latencyMs: 5 });
    const input = await upload(Array.from({ length: 20 }, (_, i) => chatLine(i, i === 0 ? 'acme/no-such-model' : STACK_MODELS.chat)));
    const shown = (await request(s.app).get(`/v1/files/${input}`).set(org.auth)).body;
    expect(shown.expires_at).toBe(shown.created_at + 30 * 86_400);
    const b = await runBatch(input);
    expect(b.status).toBe('completed');
    const out = (await request(s.app).get(`/v1/files/${b.output_file_id}`).set(org.auth)).body;
    expect(out.expires_at).toBe(out.created_at + 30 * 86_400);
    const keys = (await s.t.db.batchPart.findMany({ where: { batchId: b.id } })).map((p) => p.storageKey);
    expect(keys.length).toBeGreaterThan(1);

    // An input read by a batch that has not ended (a row nobody drives: it stays in progress).
    const busy = await upload([chatLine(1)]);
    await s.t.db.batch.create({ data: { id: `batch_busy${Date.now()}`, organizationId: org.organizationId, apiKeyId: org.key.id, principal: {}, endpoint: '/v1/chat/completions', inputFileId: busy, completionWindow: '24h', status: 'in_progress', expiresAt: new Date(Date.now() + DAY) } });
    const young = await upload([chatLine(2)]);

    // 29 days on, nothing goes.
    const all = [input, busy, young, b.output_file_id!, b.error_file_id!];
    await age(all, 29);
    expect((await sweep()).batchFiles).toBe(0);
    expect(await s.t.db.batchFile.count({ where: { id: { in: all } } })).toBe(5);

    await age([input, busy, b.output_file_id!, b.error_file_id!], 31);
    // Expired: hidden from the API at once (a new batch cannot name the input), before the sweep runs.
    expect((await request(s.app).get(`/v1/files/${input}`).set(org.auth)).status).toBe(404);
    expect((await request(s.app).get(`/v1/files/${b.output_file_id}/content`).set(org.auth)).status).toBe(404);
    const listed = (await request(s.app).get('/v1/files?limit=100').set(org.auth)).body.data.map((f: { id: string }) => f.id);
    expect(listed).toContain(young);
    expect(listed).not.toContain(input);
    expect((await request(s.app).post('/v1/batches').set(org.auth).send({ input_file_id: input, endpoint: '/v1/chat/completions', completion_window: '24h' })).status).toBe(400);

    expect((await sweep()).batchFiles).toBe(3);
    expect((await s.t.db.batchFile.findMany({ where: { id: { in: all } }, select: { id: true } })).map((f) => f.id).sort()).toEqual([busy, young].sort());
    expect(await s.t.db.batchPart.count({ where: { batchId: b.id } })).toBe(0);
    for (const key of [input, ...keys]) expect(await blob(key)).toBeNull();
    expect(await blob(busy)).not.toBeNull();

    // Once the batch reading it has ended, the input goes too.
    await s.t.db.batch.updateMany({ where: { inputFileId: busy }, data: { status: 'completed' } });
    expect((await sweep()).batchFiles).toBe(1);
    expect(await blob(busy)).toBeNull();
  });

  it('reads BATCH_FILE_RETENTION_DAYS: 30 unless set, 0 allowed, never negative', () => {
    expect(loadConfig({}, []).batches.fileRetentionDays).toBe(30);
    expect(loadConfig({ BATCH_FILE_RETENTION_DAYS: '0' }, []).batches.fileRetentionDays).toBe(0);
    expect(loadConfig({ BATCH_FILE_RETENTION_DAYS: '7' }, []).batches.fileRetentionDays).toBe(7);
    expect(() => loadConfig({ BATCH_FILE_RETENTION_DAYS: '-1' }, [])).toThrow(/BATCH_FILE_RETENTION_DAYS/);
  });

  it('keeps every file with a retention of 0, and shows no expiry', async () => {
    const id = await upload([chatLine(1)]);
    await age([id], 10_000);
    const keep = new BatchFiles(s.t.db, s.workerDeps.files.store, () => new Date(), 0);
    expect(await keep.deleteExpired()).toBe(0);
    const f = await s.t.db.batchFile.findUniqueOrThrow({ where: { id } });
    expect(keep.view(f).expires_at).toBeNull();
    expect(await blob(id)).not.toBeNull();
  });
});
