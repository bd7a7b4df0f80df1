import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/client';
import type { Prisma, StoredFile } from '../db/generated/client';
import { newId } from '../ids';
import { RUNNING } from './generation.service';
import { AppError } from '../errors/app-error';
import type { BlobObject, BlobStore, ByteRange } from '../storage/blob-store';
import { generationById } from '../db/generation-reads';
import type {
  FileScope,
  FileSortField,
  FileSourceName,
  FileTypeName,
  ListFilesQuery,
  StoragePolicyName,
} from '../schemas/storage.schema';

/** Signed file URLs expire on a multiple of a tenth of their lifetime, at most this many seconds (docs/security.md). */
export const URL_EXPIRY_STEP_S = 300;

/** File ids a completed generation's `result` names (`outputs[].fileId`, see shared/formats/media.mapper.ts). */
function keptFileIds(result: unknown): string[] {
  const outputs = typeof result === 'object' && result !== null ? (result as { outputs?: unknown }).outputs : undefined;
  if (!Array.isArray(outputs)) return [];
  return outputs.map((o) => (typeof o === 'object' && o !== null ? (o as { fileId?: unknown }).fileId : undefined)).filter((id): id is string => typeof id === 'string');
}

/** The stored-file record of interface.md. */
export interface StoredFileView {
  id: string;
  fileType: FileTypeName;
  mimeType: string;
  source: FileSourceName;
  storagePolicy: StoragePolicyName;
  url: string;
  size: number;
  createdAt: string;
  updatedAt: string;
  externalUserId: string | null;
  expiresAt: string | null;
}

/** How long each policy keeps a file, counted from its creation (decisions.md section 5); null: forever. */
export const RETENTION_MS: Record<StoragePolicyName, number | null> = {
  TEMP_GENERATION: 7 * 24 * 3600_000,
  TEMP_UPLOAD: 24 * 3600_000,
  PERMANENT: null,
};

export function expiryFor(policy: StoragePolicyName, createdAt: Date): Date | null {
  const ms = RETENTION_MS[policy];
  return ms === null ? null : new Date(createdAt.getTime() + ms);
}

/** Storable MIME types: image, video and audio, except SVG (an active document that could run script from our origin). */
const MEDIA_MIME = /^(image|video|audio)\/[a-z0-9][a-z0-9.+-]{0,126}$/;

/** `image/png; charset=x` → `image/png` (lower case), or null when it is not a storable media type. */
export function normalizeMediaMime(contentType: string | undefined | null): string | null {
  const mime = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (!MEDIA_MIME.test(mime) || mime === 'image/svg+xml') return null;
  return mime;
}

export function fileTypeOf(mime: string): FileTypeName {
  if (mime.startsWith('image/')) return 'IMAGE';
  if (mime.startsWith('video/')) return 'VIDEO';
  if (mime.startsWith('audio/')) return 'AUDIO';
  throw new AppError('BAD_REQUEST', `Unsupported file type ${mime}: only image, video and audio files are stored`);
}

/**
 * Whose files a listing shows. `all`: the whole organization. `mine`: the caller's own (a personal-account
 * token: files whose user is the caller, including those made through the caller's keys; an API key: files
 * made through that key). `others`: the rest of the organization.
 */
export interface FileOwner {
  kind: 'user' | 'key';
  id: string;
}

export interface ListFilesInput extends ListFilesQuery {
  organizationId: string;
  /** Required for `mine` and `others`. */
  owner?: FileOwner;
}

export interface FileList {
  data: StoredFileView[];
  meta: { page: number; limit: number; total: number; totalPages: number };
}

interface NewFile {
  organizationId: string;
  userId: string | null;
  apiKeyId: string | null;
  bytes: Buffer;
  mimeType: string;
  externalUserId?: string | null;
}

export interface FilesServiceOptions {
  db: Db;
  store: BlobStore;
  /** Signs file URLs; a function so a worker resolves it only when it first signs. */
  secret: string | (() => string);
  /** Absolute origin of file URLs: PUBLIC_BASE_URL, else `http://localhost:${PORT}`. */
  baseUrl: string;
  /** Lifetime of a signed URL (FILE_URL_TTL_SECONDS), seconds; default 3600. */
  urlTtlSeconds?: number;
  clock?: () => Date;
  /** Files deleted per round of `deleteExpired`. */
  batchSize?: number;
  onError?: (message: string, meta: Record<string, unknown>) => void;
}

export function filesBaseUrl(config: { publicBaseUrl?: string; port: number }): string {
  return (config.publicBaseUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
}

const ORDER_FIELDS: Record<FileSortField, keyof Prisma.StoredFileOrderByWithRelationInput> = {
  createdAt: 'createdAt',
  size: 'size',
  expiresAt: 'expiresAt',
  externalUserId: 'externalUserId',
};

/**
 * Stored files: bytes in a BlobStore, records in PostgreSQL. Bytes are written before the record (a failed
 * insert removes them) and removed before the record (a failed removal leaves a record to retry with).
 * Files past `expiresAt` are treated as gone at once, before the maintenance job removes them.
 */
export class FilesService {
  private readonly db: Db;
  readonly store: BlobStore;
  private readonly secret: () => string;
  private readonly baseUrl: string;
  private readonly urlTtlSeconds: number;
  private readonly clock: () => Date;
  private readonly batchSize: number;
  private readonly onError: NonNullable<FilesServiceOptions['onError']>;

  constructor(opts: FilesServiceOptions) {
    this.db = opts.db;
    this.store = opts.store;
    const s = opts.secret;
    this.secret = typeof s === 'string' ? () => s : s;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.urlTtlSeconds = opts.urlTtlSeconds ?? 3600;
    this.clock = opts.clock ?? (() => new Date());
    this.batchSize = opts.batchSize ?? 100;
    this.onError = opts.onError ?? (() => undefined);
  }

  /** A generated file (media worker): AI_GENERATION, TEMP_GENERATION, expires 7 days on. */
  async saveGenerated(input: NewFile & { generationId: string }): Promise<StoredFileView> {
    return this.view(await this.save(input, 'AI_GENERATION', 'TEMP_GENERATION', input.generationId));
  }

  /** A caller's upload: USER_UPLOAD, TEMP_UPLOAD (24 h) unless PERMANENT is asked. */
  async saveUpload(input: NewFile & { storagePolicy?: 'TEMP_UPLOAD' | 'PERMANENT' }): Promise<StoredFileView> {
    return this.view(await this.save(input, 'USER_UPLOAD', input.storagePolicy ?? 'TEMP_UPLOAD', null));
  }

  private async save(input: NewFile, source: FileSourceName, policy: StoragePolicyName, generationId: string | null): Promise<StoredFile> {
    const mime = normalizeMediaMime(input.mimeType);
    if (!mime) throw new AppError('BAD_REQUEST', `Unsupported file type ${input.mimeType}: only image, video and audio files are stored`);
    const id = newId('file');
    const now = this.clock();
    const { size } = await this.store.put(id, input.bytes, mime, input.bytes.length);
    try {
      return await this.db.storedFile.create({
        data: {
          id,
          organizationId: input.organizationId,
          userId: input.userId,
          apiKeyId: input.apiKeyId,
          generationId,
          fileType: fileTypeOf(mime),
          mimeType: mime,
          source,
          storagePolicy: policy,
          storageKey: id,
          size: BigInt(size),
          externalUserId: input.externalUserId ?? null,
          expiresAt: expiryFor(policy, now),
          createdAt: now,
          updatedAt: now,
        },
      });
    } catch (e) {
      await this.store.delete(id).catch(() => undefined);
      throw e;
    }
  }

  /**
   * HMAC of the file id and the URL's expiry (unix seconds) with the service secret: the URL works without an
   * Authorization header (e.g. in <img>) until `exp`.
   */
  signature(id: string, exp: number): string {
    return createHmac('sha256', this.secret()).update(`switchyard-file:${id}:${exp}`).digest('base64url');
  }

  /** `bad` (wrong or missing signature: the caller learns nothing), `expired`, or `ok`. */
  checkSignedUrl(id: string, sig: unknown, exp: unknown): 'ok' | 'bad' | 'expired' {
    if (typeof sig !== 'string' || typeof exp !== 'string' || !/^\d{1,12}$/.test(exp)) return 'bad';
    const expected = Buffer.from(this.signature(id, Number(exp)));
    const given = Buffer.from(sig);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'bad';
    return Number(exp) * 1000 <= this.clock().getTime() ? 'expired' : 'ok';
  }

  /**
   * Absolute, signed URL of the file's bytes, served by Switchyard, valid for at least `urlTtlSeconds` from `from`
   * (now). The expiry is rounded up to a step (a tenth of the lifetime, at most URL_EXPIRY_STEP_S), so the same
   * file read twice within a step gets the same URL (stable for caches, and for a client comparing two reads).
   */
  fileUrl(id: string, from: Date = this.clock()): string {
    const step = Math.max(1, Math.min(URL_EXPIRY_STEP_S, Math.floor(this.urlTtlSeconds / 10)));
    const exp = Math.ceil((Math.floor(from.getTime() / 1000) + this.urlTtlSeconds) / step) * step;
    return `${this.baseUrl}/v1/files/${encodeURIComponent(id)}/content?exp=${exp}&sig=${this.signature(id, exp)}`;
  }

  /**
   * A generation with fresh signed URLs in its stored result (`outputs[].url`, `data.url`, `data.items[].url`):
   * the URLs stored when it completed expire, so every reply signs them anew. `from` fixes the signing time (a
   * callback signs at its first attempt, so that every retry sends the same body).
   */
  withFreshUrls<T extends { result: unknown }>(g: T, from?: Date): T {
    const result = g.result as { outputs?: Array<{ url?: string; fileId?: string }>; data?: { url?: string; file_id?: string; items?: Array<{ url?: string; file_id?: string }> } } | null;
    if (!result || typeof result !== 'object') return g;
    const fresh = (url: string | undefined, id: string | undefined) => (typeof id === 'string' && typeof url === 'string' ? this.fileUrl(id, from) : url);
    const copy = { ...result };
    if (Array.isArray(result.outputs)) copy.outputs = result.outputs.map((o) => ({ ...o, url: fresh(o.url, o.fileId) }));
    if (result.data && typeof result.data === 'object') {
      copy.data = { ...result.data, url: fresh(result.data.url, result.data.file_id) };
      if (Array.isArray(result.data.items)) copy.data.items = result.data.items.map((i) => ({ ...i, url: fresh(i.url, i.file_id) }));
    }
    return { ...g, result: copy };
  }

  view(f: StoredFile): StoredFileView {
    return {
      id: f.id,
      fileType: f.fileType,
      mimeType: f.mimeType,
      source: f.source,
      storagePolicy: f.storagePolicy,
      url: this.fileUrl(f.id),
      size: Number(f.size),
      createdAt: f.createdAt.toISOString(),
      updatedAt: f.updatedAt.toISOString(),
      externalUserId: f.externalUserId,
      expiresAt: f.expiresAt?.toISOString() ?? null,
    };
  }

  private live(now: Date): Prisma.StoredFileWhereInput {
    return { OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
  }

  async list(q: ListFilesInput): Promise<FileList> {
    const now = this.clock();
    const and: Prisma.StoredFileWhereInput[] = [{ organizationId: q.organizationId }, this.live(now)];
    if (q.fileType) and.push({ fileType: q.fileType });
    if (q.source) and.push({ source: q.source });
    if (q.storagePolicy) and.push({ storagePolicy: q.storagePolicy });
    if (q.externalUserId !== undefined) and.push({ externalUserId: q.externalUserId });
    const scope = scopeFilter(q.scope, q.owner);
    if (scope) and.push(scope);
    const where: Prisma.StoredFileWhereInput = { AND: and };
    const field = ORDER_FIELDS[q.sortBy];
    const nullable = q.sortBy === 'expiresAt' || q.sortBy === 'externalUserId';
    // Files without expiry or without externalUserId come last in both orders; ties break by creation, then id.
    const orderBy: Prisma.StoredFileOrderByWithRelationInput[] = [
      { [field]: nullable ? { sort: q.sortOrder, nulls: 'last' } : q.sortOrder },
      ...(q.sortBy === 'createdAt' ? [] : [{ createdAt: q.sortOrder }]),
      { id: q.sortOrder },
    ];
    const [total, rows] = await Promise.all([
      this.db.storedFile.count({ where }),
      this.db.storedFile.findMany({ where, orderBy, skip: (q.page - 1) * q.limit, take: q.limit }),
    ]);
    return { data: rows.map((r) => this.view(r)), meta: { page: q.page, limit: q.limit, total, totalPages: Math.ceil(total / q.limit) } };
  }

  /** A live file of the organization, or null (another organization's file does not exist for the caller). */
  async get(organizationId: string, id: string): Promise<StoredFile | null> {
    const f = await this.db.storedFile.findUnique({ where: { id } });
    if (!f || f.organizationId !== organizationId || !this.isLive(f)) return null;
    return f;
  }

  /** A live file by id alone: for signed content URLs, whose signature already proves access. */
  async getById(id: string): Promise<StoredFile | null> {
    const f = await this.db.storedFile.findUnique({ where: { id } });
    return f && this.isLive(f) ? f : null;
  }

  private isLive(f: StoredFile): boolean {
    return f.expiresAt === null || f.expiresAt.getTime() > this.clock().getTime();
  }

  /** A new policy recomputes `expiresAt` from the file's creation time (PERMANENT: null). */
  async update(f: StoredFile, patch: { storagePolicy?: StoragePolicyName; externalUserId?: string | null }): Promise<StoredFile> {
    const data: Prisma.StoredFileUpdateManyMutationInput = { updatedAt: this.clock() };
    if (patch.storagePolicy !== undefined) {
      data.storagePolicy = patch.storagePolicy;
      data.expiresAt = expiryFor(patch.storagePolicy, f.createdAt);
    }
    if (patch.externalUserId !== undefined) data.externalUserId = patch.externalUserId;
    const { count } = await this.db.storedFile.updateMany({ where: { id: f.id }, data });
    if (count === 0) throw new AppError('NOT_FOUND', `File ${f.id} not found`);
    return (await this.db.storedFile.findUnique({ where: { id: f.id } }))!;
  }

  /** Bytes first, then the record; false when someone else removed it first. */
  async delete(f: StoredFile): Promise<boolean> {
    await this.store.delete(f.storageKey);
    const { count } = await this.db.storedFile.deleteMany({ where: { id: f.id } });
    return count > 0;
  }

  /**
   * Removes the files a generation stored that its outcome does not keep: every file of a generation that
   * ended cancelled or failed, and of a completed one those its result does not name (a duplicate run's).
   * Call it once the generation has ended; a generation still running is left alone. Returns how many went.
   */
  async discardUnkept(generationId: string): Promise<number> {
    const g = await generationById(this.db, generationId, (where) => this.db.generation.findFirst({ where, select: { status: true, result: true } }));
    if (!g || RUNNING.has(g.status)) return 0;
    const keep = g.status === 'completed' ? keptFileIds(g.result) : [];
    const files = await this.db.storedFile.findMany({ where: { generationId, ...(keep.length ? { id: { notIn: keep } } : {}) } });
    let n = 0;
    for (const f of files) if (await this.delete(f)) n++;
    return n;
  }

  /** The bytes (or a range of them), or null when the store has lost them. */
  content(f: StoredFile, range?: ByteRange): Promise<BlobObject | null> {
    return this.store.get(f.storageKey, range);
  }

  /** Removes every file expired at `now`, in batches; a file whose bytes cannot be removed is skipped this round. */
  async deleteExpired(now: Date = this.clock()): Promise<number> {
    let deleted = 0;
    const skipped: string[] = [];
    for (;;) {
      const batch = await this.db.storedFile.findMany({
        where: { expiresAt: { lte: now }, ...(skipped.length ? { id: { notIn: skipped } } : {}) },
        orderBy: { expiresAt: 'asc' },
        take: this.batchSize,
        select: { id: true, storageKey: true },
      });
      if (batch.length === 0) return deleted;
      const gone: string[] = [];
      for (const f of batch) {
        try {
          await this.store.delete(f.storageKey);
          gone.push(f.id);
        } catch (err) {
          skipped.push(f.id);
          this.onError('could not delete expired file bytes', { fileId: f.id, err });
        }
      }
      if (gone.length) deleted += (await this.db.storedFile.deleteMany({ where: { id: { in: gone } } })).count;
    }
  }
}

function scopeFilter(scope: FileScope, owner: FileOwner | undefined): Prisma.StoredFileWhereInput | null {
  if (scope === 'all') return null;
  if (!owner) throw new Error(`scope ${scope} needs the caller`);
  const mine: Prisma.StoredFileWhereInput = owner.kind === 'user' ? { userId: owner.id } : { apiKeyId: owner.id };
  if (scope === 'mine') return mine;
  // SQL's `<>` drops NULLs, so files of nobody in particular are listed explicitly as "others".
  return owner.kind === 'user'
    ? { OR: [{ userId: null }, { userId: { not: owner.id } }] }
    : { OR: [{ apiKeyId: null }, { apiKeyId: { not: owner.id } }] };
}

export type { StoredFile };
