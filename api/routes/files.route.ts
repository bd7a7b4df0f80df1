import { Router, type RequestHandler } from 'express';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import { resolveRange } from '../../shared/storage/byte-range';
import type { StoredFile } from '../../shared/services/files.service';

/**
 * File bytes, served by Switchyard: `GET /v1/files/{id}/content`.
 *
 * File URLs end up in `<img src>` and `<video src>`, which cannot send an Authorization header, so a URL carries
 * `?exp=&sig=` (HMAC-SHA256 of the file id and the expiry with the service secret): the URL alone grants read access
 * to that one file until `exp` (FILE_URL_TTL_SECONDS after it was issued, 1 hour by default; then 403) or until the
 * file is deleted or expires. Every reply that shows a URL signs a fresh one. Without `sig`, the request needs an Authorization header of the file's
 * organization, and counts against the key's (or user's) rate limit. A wrong signature is 404, like a missing file: it tells nothing about which ids exist.
 */
export function filesRoutes(ctx: AppContext): Router {
  const r = Router();

  /** Without `sig`, the request runs ctx.guard: authentication and the key's rate limit, as on every API route. */
  const guardUnlessSigned: RequestHandler = (req, res, next) => {
    if (req.query.sig !== undefined) return next();
    let i = 0;
    const step = (err?: unknown): void => {
      if (err || i === ctx.guard.length) return next(err);
      void ctx.guard[i++](req, res, step);
    };
    step();
  };

  r.get('/v1/files/:id/content', guardUnlessSigned, async (req, res) => {
    const id = String(req.params.id);
    const notFound = () => new AppError('NOT_FOUND', `File ${id} not found`);
    let file: StoredFile | null;
    if (req.query.sig !== undefined) {
      const check = ctx.files.checkSignedUrl(id, req.query.sig, req.query.exp);
      if (check === 'bad') throw notFound();
      if (check === 'expired') {
        throw new AppError('FORBIDDEN', `This file URL has expired: signed file URLs last ${ctx.config.fileUrlTtlSeconds} s; read the file record (GET /v1/storage/files/${id}) or the generation again for a fresh URL`);
      }
      file = await ctx.files.getById(id);
    } else {
      file = await ctx.files.get(res.locals.principal.organizationId, id);
    }
    if (!file) throw notFound();

    const size = Number(file.size);
    // If-Range asks for a range only if the copy is unchanged; without validators of ours, send it whole.
    const range = req.headers['if-range'] ? null : resolveRange(req.headers.range, size);
    res.setHeader('Accept-Ranges', 'bytes');
    res.setHeader('Content-Type', file.mimeType);
    res.setHeader('Content-Disposition', 'inline');
    res.setHeader('Cache-Control', 'private, max-age=3600');
    // Uploaded bytes never run as a page of our origin.
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
    if (range === 'unsatisfiable') {
      res.setHeader('Content-Range', `bytes */${size}`);
      res.status(416).json(new AppError('BAD_REQUEST', `Range not satisfiable: the file has ${size} bytes`).toBody(String(res.locals.traceId)));
      return;
    }
    const status = range ? 206 : 200;
    const length = range ? range.end - range.start + 1 : size;
    if (range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`);
    res.setHeader('Content-Length', String(length));
    if (req.method === 'HEAD') {
      res.status(status).end();
      return;
    }
    const blob = await ctx.files.content(file, range ?? undefined);
    if (!blob) {
      ctx.logger.error('stored file has no bytes', { fileId: file.id, storageKey: file.storageKey, trace_id: res.locals.traceId });
      throw notFound();
    }
    res.status(status);
    try {
      await pipeline(blob.body as Readable, res);
    } catch (err) {
      // The client went away mid-download, or the store failed after the headers were sent: nothing to reply.
      if (!res.writableFinished) ctx.logger.warn('file download interrupted', { fileId: file.id, err: (err as Error).message, trace_id: res.locals.traceId });
    }
  });

  return r;
}
