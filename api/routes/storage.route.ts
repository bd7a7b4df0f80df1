import { Router, type Request, type Response } from 'express';
import busboy from 'busboy';
import type { AppContext } from '../app-context';
import type { Principal } from '../../shared/auth/principal';
import { AppError } from '../../shared/errors/app-error';
import { bodyAborted, onClientGone } from '../middleware/client-gone';
import { check } from '../../shared/schemas/ajv';
import {
  listFilesQuerySchema,
  updateFileSchema,
  uploadOptionsSchema,
  type ListFilesQuery,
  type UpdateFileBody,
  type UploadOptions,
} from '../../shared/schemas/storage.schema';
import { normalizeMediaMime, type FileOwner, type StoredFile } from '../../shared/services/files.service';

const unsupported = (mime: string | undefined) =>
  AppError.validation(
    [{ path: '/file', message: `content type ${JSON.stringify(mime ?? '')} is not an image, video or audio type` }],
    'Only image, video and audio files can be stored',
  );
const tooLarge = (max: number) => new AppError('PAYLOAD_TOO_LARGE', `File larger than ${max} bytes`);

function ownerOf(p: Principal): FileOwner {
  return p.kind === 'user' ? { kind: 'user', id: p.userId } : { kind: 'key', id: p.keyId };
}

const isManager = (p: Principal) => p.kind === 'user' && (p.role === 'owner' || p.role === 'admin');

/** Owner and admin tokens change any file of the organization; a member token or an API key only its own. */
function assertMayChange(p: Principal, f: StoredFile): void {
  if (isManager(p)) return;
  const own = p.kind === 'user' ? f.userId === p.userId : f.apiKeyId === p.keyId;
  if (!own) throw new AppError('FORBIDDEN', 'Only owners and admins may change files of others');
}

/** A raw upload: the body is the file, its type the Content-Type; at most `max` bytes. */
function readRaw(req: Request, max: number): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > max) {
    req.resume();
    return Promise.reject(tooLarge(max));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return; // keep draining so the reply can be read
      n += c.length;
      if (n > max) {
        over = true;
        chunks.length = 0;
        reject(tooLarge(max));
      } else chunks.push(c);
    });
    req.on('end', () => !over && resolve(Buffer.concat(chunks)));
    onClientGone(req, () => reject(bodyAborted()));
  });
}

const malformed = (e: Error) => AppError.validation([{ path: '/', message: e.message }], 'Malformed multipart body');

/**
 * A multipart/form-data upload: the file in field `file`, options as text fields beside it. Any body, cut or
 * malformed, settles the promise once: busboy's own errors (a body cut short, a bad part header) are a 400, and each
 * part's stream has an 'error' listener, since busboy destroys the open part with the form's error (unheard, it
 * ended the process).
 */
function readMultipart(req: Request, max: number): Promise<{ bytes: Buffer; mimeType: string; fields: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { files: 1, fileSize: max, fields: 20, fieldSize: 4096, parts: 30 } });
    } catch (e) {
      req.resume();
      reject(malformed(e as Error));
      return;
    }
    const fields: Record<string, string> = {};
    let file: { bytes: Buffer; mimeType: string } | undefined;
    let failure: Error | undefined; // the first wins: a file over the limit stays a 413 when the body is then cut
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      if (failure) {
        req.unpipe(bb);
        req.resume(); // drain the rest, so the reply can be read
        bb.destroy();
        reject(failure);
      } else if (!file) reject(AppError.validation([{ path: '/file', message: 'is required' }], 'Multipart upload needs the field "file"'));
      else resolve({ ...file, fields });
    };
    bb.on('field', (name, value) => {
      fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      stream.on('error', () => undefined); // the form's own error, which busboy also emits on itself (below)
      const mime = normalizeMediaMime(info.mimeType);
      if (name !== 'file' || !mime) {
        if (name === 'file') failure ??= unsupported(info.mimeType);
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => {
        failure ??= tooLarge(max);
      });
      // A part's 'end' comes before busboy's 'close' (busboy waits for it), so the file is known when that settles.
      stream.on('end', () => {
        if (!failure) file = { bytes: Buffer.concat(chunks), mimeType: mime };
      });
    });
    bb.on('filesLimit', () => {
      failure ??= AppError.validation([{ path: '/file', message: 'only one file per upload' }]);
    });
    bb.on('error', (e) => {
      failure ??= malformed(e as Error);
      settle();
    });
    bb.on('close', settle);
    onClientGone(req, () => {
      failure = bodyAborted(); // no reply can reach a client gone, whatever else was wrong
      settle();
    });
    req.pipe(bb);
  });
}

/**
 * Storage endpoints (interface.md "GET /v1/storage/files", "DELETE /v1/storage/files/{id}"; decisions.md
 * section 5). Every caller sees the files of its organization; `scope` narrows the listing.
 */
export function storageRoutes(ctx: AppContext): Router {
  const r = Router();

  async function visible(res: Response, id: string): Promise<StoredFile> {
    const f = await ctx.files.get(res.locals.principal.organizationId, id);
    if (!f) throw new AppError('NOT_FOUND', `File ${id} not found`);
    return f;
  }

  r.get('/v1/storage/files', ...ctx.guard, async (req, res) => {
    const q = check<ListFilesQuery>(listFilesQuerySchema, { ...req.query }, { query: true });
    const p = res.locals.principal;
    // interface.md Authentication rule 4; an API key is a narrower credential than its user's session, so it never gets `others`.
    if (q.scope === 'others' && !isManager(p)) throw new AppError('FORBIDDEN', 'scope=others is only for owner and admin personal-account tokens');
    res.json(await ctx.files.list({ ...q, organizationId: p.organizationId, owner: ownerOf(p) }));
  });

  r.post('/v1/storage/files', ...ctx.guard, async (req, res) => {
    const p = res.locals.principal;
    const max = ctx.config.maxBodyBytes;
    const contentType = req.headers['content-type'];
    let bytes: Buffer;
    let mimeType: string;
    let options: Record<string, unknown>;
    if (/^multipart\/form-data/i.test(contentType ?? '')) {
      const part = await readMultipart(req, max);
      ({ bytes, mimeType } = part);
      options = { storagePolicy: part.fields.storagePolicy, externalUserId: part.fields.externalUserId };
    } else {
      const mime = normalizeMediaMime(contentType);
      if (!mime) {
        req.resume();
        throw unsupported(contentType);
      }
      bytes = await readRaw(req, max);
      mimeType = mime;
      options = { storagePolicy: req.query.storagePolicy, externalUserId: req.query.externalUserId };
    }
    for (const k of Object.keys(options)) if (options[k] === undefined) delete options[k];
    const opts = check<UploadOptions>(uploadOptionsSchema, options, { query: true });
    if (bytes.length === 0) throw AppError.validation([{ path: '/file', message: 'is empty' }], 'The uploaded file is empty');
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
    const body = check<UpdateFileBody>(updateFileSchema, req.body ?? {});
    const f = await visible(res, String(req.params.id));
    assertMayChange(res.locals.principal, f);
    res.json(ctx.files.view(await ctx.files.update(f, body)));
  });

  r.delete('/v1/storage/files/:id', ...ctx.guard, async (req, res) => {
    const f = await visible(res, String(req.params.id));
    assertMayChange(res.locals.principal, f);
    if (!(await ctx.files.delete(f))) throw new AppError('NOT_FOUND', `File ${f.id} not found`);
    res.json({ success: true });
  });

  return r;
}
