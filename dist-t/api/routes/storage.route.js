"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.storageRoutes = storageRoutes;
const express_1 = require("express");
const busboy_1 = __importDefault(require("busboy"));
const app_error_1 = require("../../shared/errors/app-error");
const ajv_1 = require("../../shared/schemas/ajv");
const storage_schema_1 = require("../../shared/schemas/storage.schema");
const files_service_1 = require("../../shared/services/files.service");
const unsupported = (mime) => app_error_1.AppError.validation([{ path: '/file', message: `content type ${JSON.stringify(mime ?? '')} is not an image, video or audio type` }], 'Only image, video and audio files can be stored');
const tooLarge = (max) => new app_error_1.AppError('PAYLOAD_TOO_LARGE', `File larger than ${max} bytes`);
function ownerOf(p) {
    return p.kind === 'user' ? { kind: 'user', id: p.userId } : { kind: 'key', id: p.keyId };
}
const isManager = (p) => p.kind === 'user' && (p.role === 'owner' || p.role === 'admin');
/** Owner and admin tokens change any file of the organization; a member token or an API key only its own. */
function assertMayChange(p, f) {
    if (isManager(p))
        return;
    const own = p.kind === 'user' ? f.userId === p.userId : f.apiKeyId === p.keyId;
    if (!own)
        throw new app_error_1.AppError('FORBIDDEN', 'Only owners and admins may change files of others');
}
/** A raw upload: the body is the file, its type the Content-Type; at most `max` bytes. */
function readRaw(req, max) {
    if (Number(req.headers['content-length'] ?? 0) > max) {
        req.resume();
        return Promise.reject(tooLarge(max));
    }
    return new Promise((resolve, reject) => {
        const chunks = [];
        let n = 0;
        let over = false;
        req.on('data', (c) => {
            if (over)
                return; // keep draining so the reply can be read
            n += c.length;
            if (n > max) {
                over = true;
                chunks.length = 0;
                reject(tooLarge(max));
            }
            else
                chunks.push(c);
        });
        req.on('end', () => !over && resolve(Buffer.concat(chunks)));
        req.on('error', reject);
    });
}
/** A multipart/form-data upload: the file in field `file`, options as text fields beside it. */
function readMultipart(req, max) {
    return new Promise((resolve, reject) => {
        let bb;
        try {
            bb = (0, busboy_1.default)({ headers: req.headers, limits: { files: 1, fileSize: max, fields: 20, fieldSize: 4096, parts: 30 } });
        }
        catch (e) {
            req.resume();
            reject(app_error_1.AppError.validation([{ path: '/', message: e.message }], 'Malformed multipart body'));
            return;
        }
        const fields = {};
        let file;
        let failure;
        let open = 0;
        let closed = false;
        const finish = () => {
            if (!closed || open > 0)
                return;
            if (failure)
                reject(failure);
            else if (!file)
                reject(app_error_1.AppError.validation([{ path: '/file', message: 'is required' }], 'Multipart upload needs the field "file"'));
            else
                resolve({ ...file, fields });
        };
        bb.on('field', (name, value) => {
            fields[name] = value;
        });
        bb.on('file', (name, stream, info) => {
            const mime = (0, files_service_1.normalizeMediaMime)(info.mimeType);
            if (name !== 'file' || !mime) {
                if (name === 'file')
                    failure ??= unsupported(info.mimeType);
                stream.resume();
                return;
            }
            open++;
            const chunks = [];
            stream.on('data', (c) => chunks.push(c));
            stream.on('limit', () => {
                failure ??= tooLarge(max);
            });
            stream.on('close', () => {
                open--;
                if (!failure)
                    file = { bytes: Buffer.concat(chunks), mimeType: mime };
                finish();
            });
        });
        bb.on('filesLimit', () => {
            failure ??= app_error_1.AppError.validation([{ path: '/file', message: 'only one file per upload' }]);
        });
        bb.on('error', (e) => {
            failure ??= app_error_1.AppError.validation([{ path: '/', message: e.message }], 'Malformed multipart body');
            closed = true;
            open = 0;
            req.unpipe(bb);
            req.resume();
            finish();
        });
        bb.on('close', () => {
            closed = true;
            finish();
        });
        req.pipe(bb);
    });
}
/**
 * Storage endpoints (interface.md "GET /v1/storage/files", "DELETE /v1/storage/files/{id}"; decisions.md
 * section 5). Every caller sees the files of its organization; `scope` narrows the listing.
 */
function storageRoutes(ctx) {
    const r = (0, express_1.Router)();
    async function visible(res, id) {
        const f = await ctx.files.get(res.locals.principal.organizationId, id);
        if (!f)
            throw new app_error_1.AppError('NOT_FOUND', `File ${id} not found`);
        return f;
    }
    r.get('/v1/storage/files', ...ctx.guard, async (req, res) => {
        const q = (0, ajv_1.check)(storage_schema_1.listFilesQuerySchema, { ...req.query }, { query: true });
        const p = res.locals.principal;
        // interface.md Authentication rule 4; an API key is a narrower credential than its user's session, so it never gets `others`.
        if (q.scope === 'others' && !isManager(p))
            throw new app_error_1.AppError('FORBIDDEN', 'scope=others is only for owner and admin personal-account tokens');
        res.json(await ctx.files.list({ ...q, organizationId: p.organizationId, owner: ownerOf(p) }));
    });
    r.post('/v1/storage/files', ...ctx.guard, async (req, res) => {
        const p = res.locals.principal;
        const max = ctx.config.maxBodyBytes;
        const contentType = req.headers['content-type'];
        let bytes;
        let mimeType;
        let options;
        if (/^multipart\/form-data/i.test(contentType ?? '')) {
            const part = await readMultipart(req, max);
            ({ bytes, mimeType } = part);
            options = { storagePolicy: part.fields.storagePolicy, externalUserId: part.fields.externalUserId };
        }
        else {
            const mime = (0, files_service_1.normalizeMediaMime)(contentType);
            if (!mime) {
                req.resume();
                throw unsupported(contentType);
            }
            bytes = await readRaw(req, max);
            mimeType = mime;
            options = { storagePolicy: req.query.storagePolicy, externalUserId: req.query.externalUserId };
        }
        for (const k of Object.keys(options))
            if (options[k] === undefined)
                delete options[k];
        const opts = (0, ajv_1.check)(storage_schema_1.uploadOptionsSchema, options, { query: true });
        if (bytes.length === 0)
            throw app_error_1.AppError.validation([{ path: '/file', message: 'is empty' }], 'The uploaded file is empty');
        const saved = await ctx.files.saveUpload({
            organizationId: p.organizationId,
            userId: p.userId,
            apiKeyId: p.kind === 'key' ? p.keyId : null,
            bytes,
            mimeType,
            storagePolicy: opts.storagePolicy,
            externalUserId: opts.externalUserId,
        });
        res.status(201).json(saved);
    });
    r.get('/v1/storage/files/:id', ...ctx.guard, async (req, res) => {
        res.json(ctx.files.view(await visible(res, String(req.params.id))));
    });
    r.patch('/v1/storage/files/:id', ...ctx.guard, async (req, res) => {
        const body = (0, ajv_1.check)(storage_schema_1.updateFileSchema, req.body ?? {});
        const f = await visible(res, String(req.params.id));
        assertMayChange(res.locals.principal, f);
        res.json(ctx.files.view(await ctx.files.update(f, body)));
    });
    r.delete('/v1/storage/files/:id', ...ctx.guard, async (req, res) => {
        const f = await visible(res, String(req.params.id));
        assertMayChange(res.locals.principal, f);
        if (!(await ctx.files.delete(f)))
            throw new app_error_1.AppError('NOT_FOUND', `File ${f.id} not found`);
        res.json({ success: true });
    });
    return r;
}
