"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.FilesService = exports.RETENTION_MS = exports.URL_EXPIRY_STEP_S = void 0;
exports.expiryFor = expiryFor;
exports.normalizeMediaMime = normalizeMediaMime;
exports.fileTypeOf = fileTypeOf;
exports.filesBaseUrl = filesBaseUrl;
const node_crypto_1 = require("node:crypto");
const api_keys_1 = require("../auth/api-keys");
const app_error_1 = require("../errors/app-error");
/** Signed file URLs expire on a multiple of a tenth of their lifetime, at most this many seconds (docs/security.md). */
exports.URL_EXPIRY_STEP_S = 300;
/** File ids a completed generation's `result` names (`outputs[].fileId`, see shared/formats/media.mapper.ts). */
function keptFileIds(result) {
    const outputs = typeof result === 'object' && result !== null ? result.outputs : undefined;
    if (!Array.isArray(outputs))
        return [];
    return outputs.map((o) => (typeof o === 'object' && o !== null ? o.fileId : undefined)).filter((id) => typeof id === 'string');
}
/** How long each policy keeps a file, counted from its creation (decisions.md section 5); null: forever. */
exports.RETENTION_MS = {
    TEMP_GENERATION: 7 * 24 * 3600_000,
    TEMP_UPLOAD: 24 * 3600_000,
    PERMANENT: null,
};
function expiryFor(policy, createdAt) {
    const ms = exports.RETENTION_MS[policy];
    return ms === null ? null : new Date(createdAt.getTime() + ms);
}
/** Storable MIME types: image, video and audio, except SVG (an active document that could run script from our origin). */
const MEDIA_MIME = /^(image|video|audio)\/[a-z0-9][a-z0-9.+-]{0,126}$/;
/** `image/png; charset=x` → `image/png` (lower case), or null when it is not a storable media type. */
function normalizeMediaMime(contentType) {
    const mime = (contentType ?? '').split(';')[0].trim().toLowerCase();
    if (!MEDIA_MIME.test(mime) || mime === 'image/svg+xml')
        return null;
    return mime;
}
function fileTypeOf(mime) {
    if (mime.startsWith('image/'))
        return 'IMAGE';
    if (mime.startsWith('video/'))
        return 'VIDEO';
    if (mime.startsWith('audio/'))
        return 'AUDIO';
    throw new app_error_1.AppError('BAD_REQUEST', `Unsupported file type ${mime}: only image, video and audio files are stored`);
}
function filesBaseUrl(config) {
    return (config.publicBaseUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
}
const ORDER_FIELDS = {
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
class FilesService {
    db;
    store;
    secret;
    baseUrl;
    urlTtlSeconds;
    clock;
    batchSize;
    onError;
    constructor(opts) {
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
    async saveGenerated(input) {
        return this.view(await this.save(input, 'AI_GENERATION', 'TEMP_GENERATION', input.generationId));
    }
    /** A caller's upload: USER_UPLOAD, TEMP_UPLOAD (24 h) unless PERMANENT is asked. */
    async saveUpload(input) {
        return this.view(await this.save(input, 'USER_UPLOAD', input.storagePolicy ?? 'TEMP_UPLOAD', null));
    }
    async save(input, source, policy, generationId) {
        const mime = normalizeMediaMime(input.mimeType);
        if (!mime)
            throw new app_error_1.AppError('BAD_REQUEST', `Unsupported file type ${input.mimeType}: only image, video and audio files are stored`);
        const id = (0, api_keys_1.newId)('file');
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
        }
        catch (e) {
            await this.store.delete(id).catch(() => undefined);
            throw e;
        }
    }
    /**
     * HMAC of the file id and the URL's expiry (unix seconds) with the service secret: the URL works without an
     * Authorization header (e.g. in <img>) until `exp`.
     */
    signature(id, exp) {
        return (0, node_crypto_1.createHmac)('sha256', this.secret()).update(`switchyard-file:${id}:${exp}`).digest('base64url');
    }
    /** `bad` (wrong or missing signature: the caller learns nothing), `expired`, or `ok`. */
    checkSignedUrl(id, sig, exp) {
        if (typeof sig !== 'string' || typeof exp !== 'string' || !/^\d{1,12}$/.test(exp))
            return 'bad';
        const expected = Buffer.from(this.signature(id, Number(exp)));
        const given = Buffer.from(sig);
        if (given.length !== expected.length || !(0, node_crypto_1.timingSafeEqual)(given, expected))
            return 'bad';
        return Number(exp) * 1000 <= this.clock().getTime() ? 'expired' : 'ok';
    }
    /**
     * Absolute, signed URL of the file's bytes, served by Switchyard, valid for at least `urlTtlSeconds` from `from`
     * (now). The expiry is rounded up to a step (a tenth of the lifetime, at most URL_EXPIRY_STEP_S), so the same
     * file read twice within a step gets the same URL (stable for caches, and for a client comparing two reads).
     */
    fileUrl(id, from = this.clock()) {
        const step = Math.max(1, Math.min(exports.URL_EXPIRY_STEP_S, Math.floor(this.urlTtlSeconds / 10)));
        const exp = Math.ceil((Math.floor(from.getTime() / 1000) + this.urlTtlSeconds) / step) * step;
        return `${this.baseUrl}/v1/files/${encodeURIComponent(id)}/content?exp=${exp}&sig=${this.signature(id, exp)}`;
    }
    /**
     * A generation with fresh signed URLs in its stored result (`outputs[].url`, `data.url`, `data.items[].url`):
     * the URLs stored when it completed expire, so every reply signs them anew. `from` fixes the signing time (a
     * callback signs at its first attempt, so that every retry sends the same body).
     */
    withFreshUrls(g, from) {
        const result = g.result;
        if (!result || typeof result !== 'object')
            return g;
        const fresh = (url, id) => (typeof id === 'string' && typeof url === 'string' ? this.fileUrl(id, from) : url);
        const copy = { ...result };
        if (Array.isArray(result.outputs))
            copy.outputs = result.outputs.map((o) => ({ ...o, url: fresh(o.url, o.fileId) }));
        if (result.data && typeof result.data === 'object') {
            copy.data = { ...result.data, url: fresh(result.data.url, result.data.file_id) };
            if (Array.isArray(result.data.items))
                copy.data.items = result.data.items.map((i) => ({ ...i, url: fresh(i.url, i.file_id) }));
        }
        return { ...g, result: copy };
    }
    view(f) {
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
    live(now) {
        return { OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] };
    }
    async list(q) {
        const now = this.clock();
        const and = [{ organizationId: q.organizationId }, this.live(now)];
        if (q.fileType)
            and.push({ fileType: q.fileType });
        if (q.source)
            and.push({ source: q.source });
        if (q.storagePolicy)
            and.push({ storagePolicy: q.storagePolicy });
        if (q.externalUserId !== undefined)
            and.push({ externalUserId: q.externalUserId });
        const scope = scopeFilter(q.scope, q.owner);
        if (scope)
            and.push(scope);
        const where = { AND: and };
        const field = ORDER_FIELDS[q.sortBy];
        const nullable = q.sortBy === 'expiresAt' || q.sortBy === 'externalUserId';
        // Files without expiry or without externalUserId come last in both orders; ties break by creation, then id.
        const orderBy = [
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
    async get(organizationId, id) {
        const f = await this.db.storedFile.findUnique({ where: { id } });
        if (!f || f.organizationId !== organizationId || !this.isLive(f))
            return null;
        return f;
    }
    /** A live file by id alone: for signed content URLs, whose signature already proves access. */
    async getById(id) {
        const f = await this.db.storedFile.findUnique({ where: { id } });
        return f && this.isLive(f) ? f : null;
    }
    isLive(f) {
        return f.expiresAt === null || f.expiresAt.getTime() > this.clock().getTime();
    }
    /** A new policy recomputes `expiresAt` from the file's creation time (PERMANENT: null). */
    async update(f, patch) {
        const data = { updatedAt: this.clock() };
        if (patch.storagePolicy !== undefined) {
            data.storagePolicy = patch.storagePolicy;
            data.expiresAt = expiryFor(patch.storagePolicy, f.createdAt);
        }
        if (patch.externalUserId !== undefined)
            data.externalUserId = patch.externalUserId;
        const { count } = await this.db.storedFile.updateMany({ where: { id: f.id }, data });
        if (count === 0)
            throw new app_error_1.AppError('NOT_FOUND', `File ${f.id} not found`);
        return (await this.db.storedFile.findUnique({ where: { id: f.id } }));
    }
    /** Bytes first, then the record; false when someone else removed it first. */
    async delete(f) {
        await this.store.delete(f.storageKey);
        const { count } = await this.db.storedFile.deleteMany({ where: { id: f.id } });
        return count > 0;
    }
    /**
     * Removes the files a generation stored that its outcome does not keep: every file of a generation that
     * ended cancelled or failed, and of a completed one those its result does not name (a duplicate run's).
     * Call it once the generation has ended; a generation still running is left alone. Returns how many went.
     */
    async discardUnkept(generationId) {
        const g = await this.db.generation.findUnique({ where: { id: generationId }, select: { status: true, result: true } });
        if (!g || g.status === 'pending' || g.status === 'processing')
            return 0;
        const keep = g.status === 'completed' ? keptFileIds(g.result) : [];
        const files = await this.db.storedFile.findMany({ where: { generationId, ...(keep.length ? { id: { notIn: keep } } : {}) } });
        let n = 0;
        for (const f of files)
            if (await this.delete(f))
                n++;
        return n;
    }
    /** The bytes (or a range of them), or null when the store has lost them. */
    content(f, range) {
        return this.store.get(f.storageKey, range);
    }
    /** Removes every file expired at `now`, in batches; a file whose bytes cannot be removed is skipped this round. */
    async deleteExpired(now = this.clock()) {
        let deleted = 0;
        const skipped = [];
        for (;;) {
            const batch = await this.db.storedFile.findMany({
                where: { expiresAt: { lte: now }, ...(skipped.length ? { id: { notIn: skipped } } : {}) },
                orderBy: { expiresAt: 'asc' },
                take: this.batchSize,
                select: { id: true, storageKey: true },
            });
            if (batch.length === 0)
                return deleted;
            const gone = [];
            for (const f of batch) {
                try {
                    await this.store.delete(f.storageKey);
                    gone.push(f.id);
                }
                catch (err) {
                    skipped.push(f.id);
                    this.onError('could not delete expired file bytes', { fileId: f.id, err });
                }
            }
            if (gone.length)
                deleted += (await this.db.storedFile.deleteMany({ where: { id: { in: gone } } })).count;
        }
    }
}
exports.FilesService = FilesService;
function scopeFilter(scope, owner) {
    if (scope === 'all')
        return null;
    if (!owner)
        throw new Error(`scope ${scope} needs the caller`);
    const mine = owner.kind === 'user' ? { userId: owner.id } : { apiKeyId: owner.id };
    if (scope === 'mine')
        return mine;
    // SQL's `<>` drops NULLs, so files of nobody in particular are listed explicitly as "others".
    return owner.kind === 'user'
        ? { OR: [{ userId: null }, { userId: { not: owner.id } }] }
        : { OR: [{ apiKeyId: null }, { apiKeyId: { not: owner.id } }] };
}
