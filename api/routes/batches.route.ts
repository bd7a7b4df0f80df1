import { Router, type Request } from 'express';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { Readable } from 'node:stream';
import type { AppContext } from '../app-context';
import type { Principal } from '../../shared/auth/principal';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { BATCH_FILE_MAX_BYTES, isBatchFileId, type BatchFile, type BatchFiles } from '../../shared/services/batch-files.service';
import {
  createBatchSchema,
  listBatchesQuerySchema,
  listBatchFilesQuerySchema,
  uploadBatchFileSchema,
  type CreateBatchBody,
  type ListBatchesQuery,
  type ListBatchFilesQuery,
} from '../../shared/schemas/batches.schema';

const malformed = (e: unknown) => AppError.validation([{ path: '/', message: (e as Error).message }], 'Malformed multipart body');

/**
 * A multipart upload (`file` + `purpose`) streamed to the file storage as it arrives: up to 100 MiB, above
 * MAX_BODY_BYTES, never in memory. Every failure of the body (malformed, too large, too many lines, the client gone)
 * is a 4xx once the request is drained; a stored file whose fields turn out wrong is deleted.
 */
function receiveUpload(req: Request, files: BatchFiles, p: Principal): Promise<{ file: BatchFile; fields: Record<string, string> }> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { files: 1, fileSize: BATCH_FILE_MAX_BYTES + 1, fields: 10, fieldSize: 4096, parts: 20 } });
    } catch (e) {
      req.resume();
      reject(malformed(e));
      return;
    }
    const fields: Record<string, string> = {};
    let upload: Promise<BatchFile> | undefined;
    let current: Readable | undefined;
    let failure: AppError | undefined;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (!upload) return reject(failure ?? AppError.validation([{ path: '/file', message: 'is required' }], 'Multipart upload needs the field "file"'));
      upload.then(
        async (file) => {
          if (!failure) return resolve({ file, fields });
          await files.delete(file).catch(() => undefined);
          reject(failure);
        },
        (e: unknown) => reject(failure ?? e),
      );
    };
    bb.on('field', (name, value) => {
      fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || upload) {
        stream.resume();
        return;
      }
      current = stream;
      upload = files.upload(p, info.filename || 'input.jsonl', stream);
      upload.catch(() => undefined); // its failure is the reply's, at the end
    });
    bb.on('filesLimit', () => {
      failure ??= AppError.validation([{ path: '/file', message: 'only one file per upload' }]);
    });
    bb.on('error', (e) => {
      failure ??= malformed(e);
      current?.destroy(failure);
      req.unpipe(bb);
      req.resume();
      end();
    });
    bb.on('close', end);
    req.on('error', (e) => {
      failure ??= malformed(e);
      current?.destroy(failure);
      end();
    });
    req.pipe(bb);
  });
}

/**
 * The Batch API (decisions.md section 7; docs/batches.md): `/v1/files` for batch input and output files and
 * `/v1/batches`, as OpenAI's, so the official SDKs' `files` and `batches` work unchanged. Files and batches are scoped
 * like the history (an API key its own, a member its own, an owner or admin the organization's).
 */
export function batchesRoutes(ctx: AppContext): Router {
  const r = Router();
  const idOf = (req: { params: Record<string, string | string[] | undefined> }) => String(req.params.id);
  const page = <T extends { id: string }>(data: T[], hasMore: boolean) => ({ object: 'list' as const, data, first_id: data[0]?.id ?? null, last_id: data[data.length - 1]?.id ?? null, has_more: hasMore });

  r.post('/v1/files', ...ctx.guard, async (req, res) => {
    if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) {
      req.resume();
      throw AppError.validation([{ path: '/', message: 'must be multipart/form-data with the fields "file" and "purpose"' }], 'Upload a file as multipart/form-data');
    }
    const { file, fields } = await receiveUpload(req, ctx.batchFiles, res.locals.principal);
    try {
      check(uploadBatchFileSchema, { purpose: fields.purpose });
    } catch (e) {
      await ctx.batchFiles.delete(file).catch(() => undefined);
      throw e;
    }
    res.json(ctx.batchFiles.view(file));
  });

  r.get('/v1/files', ...ctx.guard, async (req, res) => {
    const q = check<ListBatchFilesQuery>(listBatchFilesQuerySchema, { ...(req.query as Record<string, unknown>) }, { query: true });
    const { data, hasMore } = await ctx.batchFiles.list(res.locals.principal, q);
    res.json(page(data.map((f) => ctx.batchFiles.view(f)), hasMore));
  });

  r.get('/v1/files/:id', ...ctx.guard, async (req, res) => {
    res.json(ctx.batchFiles.view(await ctx.batchFiles.get(res.locals.principal, idOf(req))));
  });

  r.delete('/v1/files/:id', ...ctx.guard, async (req, res) => {
    const f = await ctx.batchFiles.get(res.locals.principal, idOf(req));
    if (!(await ctx.batchFiles.delete(f))) throw new AppError('CONFLICT', `File ${f.id} is the input of a batch that has not ended`);
    res.json({ id: f.id, object: 'file', deleted: true });
  });

  // A batch file's bytes; a stored media file's (`file_...`, signed URLs) are served by files.route.ts.
  r.get('/v1/files/:id/content', (req, _res, next) => next(isBatchFileId(idOf(req)) ? undefined : 'route'), ...ctx.guard, async (req, res) => {
    const f = await ctx.batchFiles.get(res.locals.principal, idOf(req));
    res.setHeader('Content-Type', 'application/jsonl');
    res.setHeader('Content-Length', String(f.bytes));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const body = await ctx.batchFiles.content(f);
    try {
      await pipeline(body, res);
    } catch (err) {
      if (!res.writableFinished) ctx.logger.warn('batch file download interrupted', { fileId: f.id, err: (err as Error).message, trace_id: res.locals.traceId });
    }
  });

  r.post('/v1/batches', ...ctx.guard, async (req, res) => {
    const body = check<CreateBatchBody>(createBatchSchema, req.body ?? {});
    res.json(ctx.batches.view(await ctx.batches.create(res.locals.principal, res.locals.traceId, body)));
  });

  r.get('/v1/batches', ...ctx.readGuard, async (req, res) => {
    const q = check<ListBatchesQuery>(listBatchesQuerySchema, { ...(req.query as Record<string, unknown>) }, { query: true });
    const { data, hasMore } = await ctx.batches.list(res.locals.principal, q);
    res.json(page(data.map((b) => ctx.batches.view(b)), hasMore));
  });

  r.get('/v1/batches/:id', ...ctx.readGuard, async (req, res) => {
    res.json(ctx.batches.view(await ctx.batches.get(res.locals.principal, idOf(req))));
  });

  r.post('/v1/batches/:id/cancel', ...ctx.guard, async (req, res) => {
    res.json(ctx.batches.view(await ctx.batches.cancel(res.locals.principal, idOf(req))));
  });

  return r;
}
