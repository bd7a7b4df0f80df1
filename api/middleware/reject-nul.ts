import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../shared/errors/app-error';

/**
 * PostgreSQL stores no U+0000 in text or jsonb, so a NUL character anywhere in a request (a JSON string or key, a
 * query value, a path segment) used to fail deep inside as a 500. It is refused up front as a 400 instead (found
 * by the fault suite's fuzzer, docs/faults.md).
 */
export function rejectNulCharacters(req: Request, _res: Response, next: NextFunction): void {
  if (/%00/.test(req.originalUrl)) return next(AppError.validation([{ path: '/', message: 'the URL must not contain the NUL character (%00)' }]));
  // The quick test first (native, no allocation per node); the path is worked out only for a body that has one.
  const at = req.body !== undefined && JSON.stringify(req.body)?.includes('\\u0000') ? nulPath(req.body) : null;
  if (at !== null) return next(AppError.validation([{ path: at, message: 'must not contain the NUL character (U+0000)' }]));
  next();
}

/** JSON pointer of the first string or key holding U+0000, or null. Iterative: bodies may nest thousands deep. */
function nulPath(root: unknown): string | null {
  const stack: Array<[unknown, string]> = [[root, '']];
  while (stack.length) {
    const [value, at] = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return at || '/';
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push([item, `${at}/${i}`]));
    } else if (value && typeof value === 'object' && !ArrayBuffer.isView(value)) {
      for (const [key, item] of Object.entries(value)) {
        const here = `${at}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
        if (key.includes('\u0000')) return here.replace(/\u0000/g, '\\u0000');
        stack.push([item, here]);
      }
    }
  }
  return null;
}
