import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../../shared/errors/app-error';
import { bodyAborted } from './client-gone';

/**
 * PostgreSQL stores no U+0000 in text or jsonb, so a NUL character anywhere in a request (a JSON string or key, a
 * query value, a path segment) used to fail deep inside as a 500. It is refused up front as a 400 instead (found
 * by the fault suite's fuzzer, docs/faults.md). This one runs for every request and checks the URL (also for a
 * malformed percent-escape, which Express would fail on when decoding a route parameter); the body is
 * checked by `jsonBody`, after authentication.
 */
export function rejectNulCharacters(req: Request, _res: Response, next: NextFunction): void {
  if (/%00/.test(req.originalUrl)) return next(AppError.validation([{ path: '/', message: 'the URL must not contain the NUL character (%00)' }]));
  try {
    decodeURIComponent(req.path);
  } catch {
    return next(AppError.validation([{ path: '/', message: 'the URL has a malformed percent-escape' }], 'The URL is not valid: a malformed percent-escape'));
  }
  next();
}

/** Deeper JSON than this is refused: nothing we accept nests so deep, and deeper values overflow recursive code downstream. */
export const MAX_JSON_DEPTH = 100;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a string cannot be stored (PostgreSQL refuses U+0000 in text and a lone UTF-16 surrogate in json), or null. */
function badString(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(s)) return 'must not contain a lone UTF-16 surrogate (\\ud800-\\udfff without its pair): it is not valid Unicode';
  return null;
}

interface Node {
  value: unknown;
  parent: Node | null;
  key: string;
  depth: number;
}

const pointer = (node: Node): string => {
  const parts: string[] = [];
  for (let n: Node | null = node; n && n.parent; n = n.parent) parts.push(n.key.replace(/~/g, '~0').replace(/\//g, '~1'));
  const at = parts.reverse().map((p) => `/${p}`).join('') || '/';
  return at.replace(/\u0000/g, '\\u0000').replace(/[\ud800-\udfff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
};

/**
 * The first problem in a parsed JSON body: a NUL character or lone surrogate in a string or key, or nesting deeper
 * than MAX_JSON_DEPTH. Iterative (an explicit stack), so no body can overflow the call stack here.
 */
export function jsonBodyProblem(root: unknown): { path: string; message: string } | null {
  const rootNode: Node = { value: root, parent: null, key: '', depth: 0 };
  if (typeof root === 'string') {
    const why = badString(root);
    return why ? { path: '/', message: why } : null;
  }
  const stack: Node[] = [rootNode];
  // Strings are checked where they are met; a node is allocated only for objects and arrays (and a problem's path).
  const visit = (parent: Node, key: string, item: unknown): { path: string; message: string } | null => {
    if (typeof item === 'string') {
      const why = badString(item);
      if (why) return { path: pointer({ value: item, parent, key, depth: parent.depth + 1 }), message: why };
    } else if (item !== null && typeof item === 'object') {
      stack.push({ value: item, parent, key, depth: parent.depth + 1 });
    }
    return null;
  };
  while (stack.length) {
    const node = stack.pop()!;
    const value = node.value as object;
    if (value === null || typeof value !== 'object') continue;
    if (node.depth >= MAX_JSON_DEPTH) return { path: pointer(node), message: `nests deeper than ${MAX_JSON_DEPTH} levels` };
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = visit(node, String(i), value[i]);
        if (problem) return problem;
      }
    } else {
      for (const key of Object.keys(value)) {
        const why = badString(key);
        if (why) return { path: pointer({ value: null, parent: node, key, depth: node.depth + 1 }), message: `key ${why}` };
        const problem = visit(node, key, (value as Record<string, unknown>)[key]);
        if (problem) return problem;
      }
    }
  }
  return null;
}

/** A \u0000 or \ud800-\udfff escape (or an escaped backslash before such text: a false alarm costs only the walk). */
const NUL_OR_SURROGATE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;
const BACKSLASH = 0x5c;
const LEFT_BRACE = 0x7b;
const LEFT_BRACKET = 0x5b;

/**
 * What the UTF-8 text of a JSON body proves, from its bytes alone, about what jsonBodyProblem would find in it
 * (cheaper than walking every parsed string). UTF-8 decodes no lone surrogate (a bad sequence becomes U+FFFD) and
 * JSON.parse takes no raw NUL, so without a \u0000 or \ud800-\udfff escape (or what looks like one) no string or
 * key is bad: 'strings'. At most MAX_JSON_DEPTH `{` and `[` in all cannot nest that deep either: 'all'.
 */
function provenClean(buf: Buffer): 'all' | 'strings' | 'nothing' {
  // Latin-1 maps each byte to one character: a regular expression is the fastest scan, and no byte of a multi-byte
  // UTF-8 sequence reads as ASCII.
  if (buf.indexOf(BACKSLASH) >= 0 && NUL_OR_SURROGATE_ESCAPE.test(buf.toString('latin1'))) return 'nothing';
  let containers = 0;
  for (let i = buf.indexOf(LEFT_BRACE); i >= 0 && containers <= MAX_JSON_DEPTH; i = buf.indexOf(LEFT_BRACE, i + 1)) containers++;
  for (let i = buf.indexOf(LEFT_BRACKET); i >= 0 && containers <= MAX_JSON_DEPTH; i = buf.indexOf(LEFT_BRACKET, i + 1)) containers++;
  return containers <= MAX_JSON_DEPTH ? 'all' : 'strings';
}

/** Whether an object or array in `root` nests as deep as jsonBodyProblem refuses (its depth rule alone, strings unread). */
function nestsTooDeep(root: unknown): boolean {
  const values: unknown[] = [root];
  const depths: number[] = [0];
  while (values.length) {
    const value = values.pop();
    const depth = depths.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return true;
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (child !== null && typeof child === 'object') {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/**
 * JSON request bodies, parsed only once the caller is authenticated (ctx.guard puts this after authentication and
 * the rate limit), then checked by jsonBodyProblem: a body PostgreSQL could not store is a 400, not a 500. What a
 * UTF-8 body's bytes prove (provenClean) spares that walk: all of it for nearly every request, all but a depth-only
 * walk for a larger one. Whenever a problem may be there, jsonBodyProblem finds and names it as before.
 */
export function jsonBody(maxBytes: number): RequestHandler[] {
  const proven = new WeakMap<Request, 'all' | 'strings'>();
  return [
    // A client gone before its body is read: body-parser would take the request as bodiless, and the route would run.
    (req, _res, next) => next(req.destroyed && !req.complete ? bodyAborted() : undefined),
    express.json({
      limit: maxBytes,
      type: ['application/json', 'application/*+json'],
      verify: (req, _res, buf, encoding) => {
        if (encoding !== 'utf-8') return;
        const clean = provenClean(buf);
        if (clean !== 'nothing') proven.set(req as Request, clean);
      },
    }),
    (req, _res, next) => {
      const clean = proven.get(req);
      const mayHaveProblem = req.body !== undefined && clean !== 'all' && (clean !== 'strings' || nestsTooDeep(req.body));
      const problem = mayHaveProblem ? jsonBodyProblem(req.body) : null;
      if (problem) return next(AppError.validation([problem]));
      next();
    },
  ];
}
