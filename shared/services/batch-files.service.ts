import { randomBytes } from 'node:crypto';
import { PassThrough, Readable } from 'node:stream';
import type { Db } from '../db/client';
import type { Batch, BatchFile, Prisma } from '../db/generated/client';
import type { BlobStore } from '../storage/blob-store';
import type { Principal } from '../auth/principal';
import { ownerOf } from '../auth/principal';
import { randomBase62 } from '../ids';
import { AppError } from '../errors/app-error';
import { LineCounter } from './jsonl';

/** What one input file may hold (decisions.md section 7). */
export const BATCH_FILE_MAX_BYTES = 100 * 1024 * 1024;
export const BATCH_FILE_MAX_LINES = 50_000;

export type BatchFilePurpose = 'batch' | 'batch_output';

/** Which of a batch's files a part belongs to. */
export type BatchPartKind = 'output' | 'error';

/** A part a driver's commit wrote: its object in the store, its size and lines. */
export interface NewBatchPart {
  kind: BatchPartKind;
  storageKey: string;
  bytes: number;
  lines: number;
}

/** The statuses of a batch that has not ended (its input is read, its parts are still being written). */
export const BATCH_NOT_ENDED = ['validating', 'in_progress', 'finalizing', 'cancelling'];

const DAY_MS = 86_400_000;
/** Parts read from the table at once while a file is served. */
const PARTS_PAGE = 1000;
/** Files deleted per round of `deleteExpired`. */
const SWEEP_PAGE = 100;
/**
 * A part's write (`batch_part_writes`) older than this was never committed: the sweep deletes its object. A step commits
 * its parts right after writing them (a run steps for 5 s): an hour is past any live step, even a stalled process's.
 */
export const PART_WRITE_MAX_AGE_MS = 60 * 60_000;
class PartsSwept extends Error {} // rolls back a commit whose writes' rows the sweep took (their objects may be gone)

/** OpenAI's file object. */
export interface FileObject {
  id: string;
  object: 'file';
  bytes: number;
  created_at: number;
  filename: string;
  purpose: BatchFilePurpose;
  expires_at: number | null;
  status: 'processed';
}

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

/** A batch file's id: OpenAI's `file-` form (a stored media file's id is `file_...`: GET /v1/files/{id}/content tells them apart). */
export const newBatchFileId = () => `file-${randomBase62(24)}`;
export const isBatchFileId = (id: string) => id.startsWith('file-');

/**
 * What a caller may see of batch files and batches, scoped like the history: an API key its own, a member its own
 * (and its keys'), an owner or admin the organization's.
 */
export function visibleTo(p: Principal): { organizationId: string; apiKeyId?: string; userId?: string } {
  if (p.kind === 'key') return { organizationId: p.organizationId, apiKeyId: p.keyId };
  return p.role === 'member' ? { organizationId: p.organizationId, userId: p.userId } : { organizationId: p.organizationId };
}

/**
 * The files of the Batch API (docs/batches.md): an organization's JSONL inputs (purpose `batch`), streamed to the
 * file storage as they are uploaded, and the output and error files batches write (purpose `batch_output`), kept as
 * the parts their driver appended. They are not media: /v1/storage/files does not list them.
 */
export class BatchFiles {
  constructor(
    private readonly db: Db,
    private readonly store: BlobStore,
    private readonly clock: () => Date = () => new Date(),
    /** BATCH_FILE_RETENTION_DAYS: a file without its own expiry expires this long after its creation; 0 never. */
    private readonly retentionDays = 0,
  ) {}

  view(f: BatchFile): FileObject {
    const expires = this.expiresAt(f);
    return {
      id: f.id,
      object: 'file',
      bytes: Number(f.bytes),
      created_at: unix(f.createdAt),
      filename: f.filename,
      purpose: f.purpose as BatchFilePurpose,
      expires_at: expires ? unix(expires) : null,
      status: 'processed',
    };
  }

  /** When a file expires (then it is hidden, and deleted by the maintenance sweep): its own expiry, else its creation + the retention. */
  expiresAt(f: Pick<BatchFile, 'createdAt' | 'expiresAt'>): Date | null {
    if (f.expiresAt) return f.expiresAt;
    return this.retentionDays > 0 ? new Date(f.createdAt.getTime() + this.retentionDays * DAY_MS) : null;
  }

  /** The files not expired at `now`. */
  private live(now: Date): Prisma.BatchFileWhereInput {
    if (this.retentionDays === 0) return { OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
    return { OR: [{ expiresAt: null, createdAt: { gt: new Date(now.getTime() - this.retentionDays * DAY_MS) } }, { expiresAt: { gt: now } }] };
  }

  /** The files expired at `now`. */
  private expired(now: Date): Prisma.BatchFileWhereInput {
    const own: Prisma.BatchFileWhereInput = { expiresAt: { lte: now } };
    if (this.retentionDays === 0) return own;
    return { OR: [own, { expiresAt: null, createdAt: { lte: new Date(now.getTime() - this.retentionDays * DAY_MS) } }] };
  }

  /**
   * Streams an upload to the store, counting its lines; the record is written once every byte is stored. A stream
   * that fails (too large, too many lines, the client gone) stores nothing and rejects with the reason.
   */
  async upload(p: Principal, filename: string, body: NodeJS.ReadableStream, limits = { lines: BATCH_FILE_MAX_LINES, bytes: BATCH_FILE_MAX_BYTES }): Promise<BatchFile> {
    const id = newBatchFileId();
    const counter = new LineCounter(limits.lines, limits.bytes);
    body.on('error', (e) => counter.destroy(e));
    // Past a limit the rest of the upload is read and dropped, so the reply can go out on a drained request.
    counter.on('error', () => {
      body.unpipe(counter);
      body.resume();
    });
    body.pipe(counter);
    await this.store.put(id, counter, 'application/jsonl');
    if (counter.lines === 0) {
      await this.store.delete(id).catch(() => undefined);
      throw AppError.validation([{ path: '/file', message: 'is empty' }], 'The uploaded file has no lines');
    }
    const owner = ownerOf(p);
    return this.db.batchFile.create({
      data: { id, ...owner, purpose: 'batch', filename, bytes: BigInt(counter.bytes), lines: counter.lines, storageKey: id, createdAt: this.clock() },
    });
  }

  async list(p: Principal, q: { after?: string; limit: number; order: 'asc' | 'desc'; purpose?: string }): Promise<{ data: BatchFile[]; hasMore: boolean }> {
    const where: Prisma.BatchFileWhereInput = { ...visibleTo(p), ...(q.purpose && { purpose: q.purpose }), AND: [this.live(this.clock())] };
    const cursor = q.after ? await this.db.batchFile.findFirst({ where: { ...where, id: q.after }, select: { createdAt: true, id: true } }) : null;
    const rows = await this.db.batchFile.findMany({
      where: cursor ? { ...where, OR: [{ createdAt: q.order === 'desc' ? { lt: cursor.createdAt } : { gt: cursor.createdAt } }, { createdAt: cursor.createdAt, id: q.order === 'desc' ? { lt: cursor.id } : { gt: cursor.id } }] } : where,
      orderBy: [{ createdAt: q.order }, { id: q.order }],
      take: q.limit + 1,
    });
    return { data: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
  }

  /** A file the caller may see (not expired), or 404. */
  async get(p: Principal, id: string): Promise<BatchFile> {
    const f = await this.db.batchFile.findFirst({ where: { id, ...visibleTo(p), AND: [this.live(this.clock())] } });
    if (!f) throw new AppError('NOT_FOUND', `File ${id} not found`);
    return f;
  }

  /** The whole file's bytes: an upload's object, or a batch's file's parts one after another, in order. */
  async content(f: BatchFile): Promise<Readable> {
    if (!f.batchId) {
      const blob = await this.store.get(f.storageKey);
      if (!blob) throw new AppError('NOT_FOUND', `File ${f.id} has no content`);
      return blob.body as Readable;
    }
    return this.concat(this.partKeys(f.batchId, f.kind as BatchPartKind));
  }

  /** The input file's bytes from `start` (a line's beginning). */
  async from(f: Pick<BatchFile, 'id' | 'storageKey'>, start: number): Promise<NodeJS.ReadableStream> {
    const blob = await this.store.get(f.storageKey, start > 0 ? { start } : undefined);
    if (!blob) throw new AppError('NOT_FOUND', `File ${f.id} has no content`);
    return blob.body;
  }

  /**
   * Deletes a file: its stored objects first (an upload's, or the parts of a batch's file), then its record and its
   * parts' rows, so a store that fails leaves the record to delete again. An input a batch that has not ended reads is
   * kept: false. Its row is locked while the batches reading it are counted and it is deleted, and a batch's create holds
   * it (`lockInput`) until the batch is recorded, so the two exclude each other: a delete that waited finds the batch
   * (409), a create that waited finds no file (issue 38 item 8: both answered 200, and the batch failed `invalid_file`).
   */
  async delete(f: Pick<BatchFile, 'id' | 'storageKey' | 'batchId' | 'kind'>): Promise<boolean> {
    if (f.batchId) {
      for await (const key of this.partKeys(f.batchId, f.kind as BatchPartKind)) await this.store.delete(key);
      await this.db.$transaction([this.db.batchPart.deleteMany({ where: { batchId: f.batchId, kind: f.kind! } }), this.db.batchFile.deleteMany({ where: { id: f.id } })]);
      return true;
    }
    return this.db.$transaction(async (tx) => {
      const locked = await tx.$queryRaw<unknown[]>`SELECT 1 FROM batch_files WHERE id = ${f.id} FOR UPDATE`;
      // Read after the lock (a statement of its own): a batch whose create held the row is committed by now.
      if (locked.length && (await tx.batch.count({ where: { inputFileId: f.id, status: { in: BATCH_NOT_ENDED } } })) > 0) return false;
      await this.store.delete(f.storageKey);
      await tx.batchFile.deleteMany({ where: { id: f.id } });
      return true;
    });
  }

  /**
   * Holds an input file for a batch being created in `tx` (a share lock on its row until `tx` ends: a delete waits for
   * the batch's commit, then sees it); false when the file is gone (deleted meanwhile).
   */
  async lockInput(tx: Prisma.TransactionClient, fileId: string): Promise<boolean> {
    return (await tx.$queryRaw<unknown[]>`SELECT 1 FROM batch_files WHERE id = ${fileId} FOR SHARE`).length > 0;
  }

  /**
   * The maintenance sweep (workers' `delete-expired-files`): deletes the files expired at `now` (objects, parts,
   * record), a page at a time, except an input that a batch not ended still reads (deleted once it has ended). How many.
   */
  async deleteExpired(now: Date = this.clock()): Promise<number> {
    let deleted = 0;
    const skipped: string[] = [];
    for (;;) {
      const page = await this.db.batchFile.findMany({
        where: { AND: [this.expired(now), ...(skipped.length ? [{ id: { notIn: skipped } }] : [])] },
        orderBy: { createdAt: 'asc' },
        take: SWEEP_PAGE,
        select: { id: true, storageKey: true, batchId: true, kind: true },
      });
      if (!page.length) return deleted;
      for (const f of page) {
        // Kept: read by a batch not ended, or the store failed (the record stays, the next sweep tries again).
        if (await this.delete(f).catch(() => false)) deleted++;
        else skipped.push(f.id);
      }
    }
  }

  /**
   * Writes one part of an output being written (a new key: a part is never written twice), its write's row first: a
   * run killed before its commit leaves that row, and `deleteUncommittedParts` the object.
   */
  async putPart(batchId: string, key: string, bytes: Buffer): Promise<void> {
    await this.db.batchPartWrite.create({ data: { storageKey: key, batchId, createdAt: this.clock() } });
    await this.store.put(key, bytes, 'application/jsonl', bytes.length);
  }

  /**
   * Commits a driver's step with the parts it wrote: `update` (the batch row's update guarded by its version: a count
   * of 1 when it applied) and the parts' rows in one transaction, numbered `seq` (the version the update replaced), so
   * a part is listed exactly when its commit applied (its write's row deleted with it). Whether it applied; a run that
   * lost lists nothing, and deletes the objects it wrote, then their writes' rows.
   */
  async commitParts(batchId: string, seq: number, parts: NewBatchPart[], update: (tx: Prisma.TransactionClient) => Promise<{ count: number }>): Promise<boolean> {
    if (!parts.length) return (await update(this.db)).count === 1;
    const keys = parts.map((p) => p.storageKey);
    const applied = await this.db.$transaction(async (tx) => {
      if ((await update(tx)).count !== 1) return false;
      // A row missing was taken by the sweep (a write older than PART_WRITE_MAX_AGE_MS): its object may be gone.
      if ((await tx.batchPartWrite.deleteMany({ where: { storageKey: { in: keys } } })).count !== keys.length) throw new PartsSwept();
      await tx.batchPart.createMany({ data: parts.map((p) => ({ batchId, kind: p.kind, seq, storageKey: p.storageKey, bytes: BigInt(p.bytes), lines: p.lines })) });
      return true;
    }).catch((e: unknown) => (e instanceof PartsSwept ? false : Promise.reject(e)));
    // Lost: nobody will list these objects; one the store fails to delete keeps its row for the sweep. (A commit that
    // threw may have applied: its objects stay; if it did not, their rows stay too and the sweep deletes them.)
    if (!applied) {
      const deleted = (await Promise.all(keys.map((k) => this.store.delete(k).then(() => k, () => '')))).filter(Boolean);
      await this.db.batchPartWrite.deleteMany({ where: { storageKey: { in: deleted } } });
    }
    return applied;
  }

  /**
   * The maintenance sweep of parts never committed: the objects of writes older than PART_WRITE_MAX_AGE_MS at `now`,
   * then their rows (a store failure keeps one), each locked meanwhile: a late commit waits, commits nothing. How many.
   */
  async deleteUncommittedParts(now: Date = this.clock()): Promise<number> {
    const before = new Date(now.getTime() - PART_WRITE_MAX_AGE_MS);
    let deleted = 0;
    for (let after = ''; ; ) {
      const page = await this.db.batchPartWrite.findMany({ where: { createdAt: { lte: before }, storageKey: { gt: after } }, orderBy: { storageKey: 'asc' }, take: SWEEP_PAGE, select: { storageKey: true } });
      for (const { storageKey } of page)
        deleted += await this.db.$transaction(async (tx) => {
          // Locked by a commit under way: that commit decides (it deletes the row, or rolls back for the next sweep).
          if (!(await tx.$queryRaw<unknown[]>`SELECT 1 FROM batch_part_writes WHERE storage_key = ${storageKey} FOR UPDATE SKIP LOCKED`).length) return 0;
          await this.store.delete(storageKey);
          await tx.batchPartWrite.delete({ where: { storageKey } });
          return 1;
        }).catch(() => 0); // the store failed: the row stays, the next sweep tries again
      if (page.length < SWEEP_PAGE) return deleted;
      after = page[page.length - 1]!.storageKey;
    }
  }

  /**
   * Stores a batch's answered lines as a new part of its output or error file (key `<batch>_o_<version>_<random>`,
   * never written twice); it is listed only once `commitParts` commits it. Null for no lines.
   */
  async writePart(batchId: string, version: number, kind: BatchPartKind, lines: string[]): Promise<NewBatchPart | null> {
    if (!lines.length) return null;
    const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''));
    const storageKey = `${batchId}_${kind === 'output' ? 'o' : 'e'}_${version}_${randomBytes(4).toString('hex')}`;
    await this.putPart(batchId, storageKey, bytes);
    return { kind, storageKey, bytes: bytes.length, lines: lines.length };
  }

  /** The record of a batch's output or error file, made of its parts of `kind` in order; null when it wrote none. */
  async fileOfParts(b: Pick<Batch, 'id' | 'organizationId' | 'apiKeyId' | 'userId'>, kind: BatchPartKind, size: { bytes: bigint; lines: number }, now: Date): Promise<Prisma.BatchFileUncheckedCreateInput | null> {
    const first = await this.db.batchPart.findFirst({ where: { batchId: b.id, kind }, orderBy: { seq: 'asc' }, select: { storageKey: true } });
    if (!first) return null;
    const owner = { organizationId: b.organizationId, apiKeyId: b.apiKeyId, userId: b.userId };
    return { id: newBatchFileId(), ...owner, purpose: 'batch_output', filename: `${b.id}_${kind}.jsonl`, ...size, storageKey: first.storageKey, batchId: b.id, kind, createdAt: now };
  }

  /** The storage keys of a batch's parts of `kind`, in order, read a page at a time. */
  async *partKeys(batchId: string, kind: BatchPartKind): AsyncGenerator<string> {
    for (let after = -Infinity; ; ) {
      const page = await this.db.batchPart.findMany({ where: { batchId, kind, ...(after > -Infinity && { seq: { gt: after } }) }, orderBy: { seq: 'asc' }, take: PARTS_PAGE, select: { seq: true, storageKey: true } });
      for (const p of page) yield p.storageKey;
      if (page.length < PARTS_PAGE) return;
      after = page[page.length - 1]!.seq;
    }
  }

  private concat(keys: AsyncIterable<string>): Readable {
    const out = new PassThrough();
    void (async () => {
      try {
        for await (const key of keys) {
          const blob = await this.store.get(key);
          if (!blob) throw new Error(`part ${key} is missing`);
          for await (const chunk of blob.body as AsyncIterable<Buffer>) if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
        }
        out.end();
      } catch (e) {
        out.destroy(e as Error);
      }
    })();
    return out;
  }
}

export type { BatchFile };
