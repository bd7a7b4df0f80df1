import { PassThrough, Readable, Transform, type TransformCallback } from 'node:stream';
import type { Db } from '../db/client';
import type { BatchFile, Prisma } from '../db/generated/client';
import type { BlobStore } from '../storage/blob-store';
import type { Principal } from '../auth/principal';
import { ownerOf } from '../auth/principal';
import { randomBase62 } from '../ids';
import { AppError } from '../errors/app-error';

/** What one input file may hold (decisions.md section 7). */
export const BATCH_FILE_MAX_BYTES = 100 * 1024 * 1024;
export const BATCH_FILE_MAX_LINES = 50_000;

export type BatchFilePurpose = 'batch' | 'batch_output';

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
 * Counts the bytes and the non-blank lines of an upload as it streams through, and stops it past the limits
 * (a 413 past the bytes, a 400 past the lines): the file never sits in memory.
 */
class LineCounter extends Transform {
  bytes = 0;
  lines = 0;
  private filled = false;

  constructor(
    private readonly maxLines: number,
    private readonly maxBytes: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) return done(new AppError('PAYLOAD_TOO_LARGE', `A batch input file holds at most ${this.maxBytes} bytes`));
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (c === 0x0a) {
        if (this.filled) this.lines++;
        this.filled = false;
      } else if (c !== 0x20 && c !== 0x09 && c !== 0x0d) this.filled = true;
    }
    if (this.lines > this.maxLines) return done(tooManyLines(this.maxLines));
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    if (this.filled) this.lines++;
    this.filled = false;
    done(this.lines > this.maxLines ? tooManyLines(this.maxLines) : null);
  }
}

const tooManyLines = (max: number) => AppError.validation([{ path: '/file', message: `holds more than ${max} lines` }], `A batch input file holds at most ${max} lines`);

/** One line of a JSONL object, its physical number (1-based) and the byte offset just after it. */
export interface FileLine {
  number: number;
  text: string;
  end: number;
}

/**
 * The lines of a stream from byte `start` (a line's beginning), numbered from `firstNumber`, one at a time: memory
 * holds one chunk and one line, whatever the file's size.
 */
export async function* readLines(body: NodeJS.ReadableStream, start = 0, firstNumber = 1): AsyncGenerator<FileLine> {
  let rest: Buffer = Buffer.alloc(0);
  let offset = start;
  let number = firstNumber;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    let buf = rest.length ? Buffer.concat([rest, chunk]) : chunk;
    let from = 0;
    for (let nl = buf.indexOf(0x0a, from); nl >= 0; nl = buf.indexOf(0x0a, from)) {
      const end = nl > from && buf[nl - 1] === 0x0d ? nl - 1 : nl;
      offset += nl + 1 - from;
      yield { number: number++, text: buf.toString('utf8', from, end), end: offset };
      from = nl + 1;
    }
    buf = buf.subarray(from);
    rest = Buffer.from(buf);
  }
  if (rest.length) {
    const end = rest[rest.length - 1] === 0x0d ? rest.length - 1 : rest.length;
    yield { number, text: rest.toString('utf8', 0, end), end: offset + rest.length };
  }
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
  ) {}

  view(f: BatchFile): FileObject {
    return {
      id: f.id,
      object: 'file',
      bytes: Number(f.bytes),
      created_at: unix(f.createdAt),
      filename: f.filename,
      purpose: f.purpose as BatchFilePurpose,
      expires_at: f.expiresAt ? unix(f.expiresAt) : null,
      status: 'processed',
    };
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
    const where: Prisma.BatchFileWhereInput = { ...visibleTo(p), ...(q.purpose && { purpose: q.purpose }) };
    const cursor = q.after ? await this.db.batchFile.findFirst({ where: { ...where, id: q.after }, select: { createdAt: true, id: true } }) : null;
    const rows = await this.db.batchFile.findMany({
      where: cursor ? { ...where, OR: [{ createdAt: q.order === 'desc' ? { lt: cursor.createdAt } : { gt: cursor.createdAt } }, { createdAt: cursor.createdAt, id: q.order === 'desc' ? { lt: cursor.id } : { gt: cursor.id } }] } : where,
      orderBy: [{ createdAt: q.order }, { id: q.order }],
      take: q.limit + 1,
    });
    return { data: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
  }

  /** A file the caller may see, or 404. */
  async get(p: Principal, id: string): Promise<BatchFile> {
    const f = await this.db.batchFile.findFirst({ where: { id, ...visibleTo(p) } });
    if (!f) throw new AppError('NOT_FOUND', `File ${id} not found`);
    return f;
  }

  /** The whole file's bytes, its parts one after another. */
  async content(f: BatchFile): Promise<Readable> {
    if (!Array.isArray(f.parts)) {
      const blob = await this.store.get(f.storageKey);
      if (!blob) throw new AppError('NOT_FOUND', `File ${f.id} has no content`);
      return blob.body as Readable;
    }
    return this.concat(f.parts as string[]);
  }

  /** The input file's bytes from `start` (a line's beginning). */
  async from(f: Pick<BatchFile, 'id' | 'storageKey'>, start: number): Promise<NodeJS.ReadableStream> {
    const blob = await this.store.get(f.storageKey, start > 0 ? { start } : undefined);
    if (!blob) throw new AppError('NOT_FOUND', `File ${f.id} has no content`);
    return blob.body;
  }

  async delete(f: BatchFile): Promise<void> {
    await this.db.batchFile.delete({ where: { id: f.id } }).catch(() => undefined);
    for (const key of Array.isArray(f.parts) ? (f.parts as string[]) : [f.storageKey]) await this.store.delete(key);
  }

  /** Writes one part of an output being written (its key is new: a part is never written twice). */
  async putPart(key: string, bytes: Buffer): Promise<void> {
    await this.store.put(key, bytes, 'application/jsonl', bytes.length);
  }

  private concat(keys: string[]): Readable {
    const out = new PassThrough();
    void (async () => {
      try {
        for (const key of keys) {
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
