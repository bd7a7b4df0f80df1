import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { ownerOf } from '../../shared/auth/principal';
import { AppError } from '../../shared/errors/app-error';
import type { IdempotencyClaim } from '../../shared/services/generation.service';

/** Printable ASCII, as Stripe and OpenAI accept (a UUID is the usual choice). */
const KEY = /^[\x21-\x7e]{1,255}$/;

/** JSON with object keys sorted: the same body with its fields in another order is the same request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object' && !Buffer.isBuffer(value)) {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * What makes two requests "the same" under one caller's key: who sends it (the API key, else the member), method,
 * path and body.
 */
export function requestHash(caller: string, method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${caller}\n${method} ${path}\n${canonicalJson(body)}`).digest('hex');
}

/**
 * Reads the `Idempotency-Key` header of a POST into `res.locals.idempotency` ({key, hash}); the generation routes
 * pass it to the gateway, which claims the key with the generation (docs/idempotency.md). Other routes ignore it.
 */
export function idempotencyKey(req: Request, res: Response, next: NextFunction): void {
  const key = req.get('idempotency-key');
  if (req.method !== 'POST' || key === undefined) return next();
  if (!KEY.test(key)) {
    return next(AppError.validation([{ path: '/headers/idempotency-key', message: 'must be 1 to 255 printable ASCII characters' }], 'Invalid Idempotency-Key header'));
  }
  // Keys are per caller (the API key, else the member; the idempotency_keys_per_caller migration names old rows so):
  // another key or member of the organization using the same key sends a different key, never meets this one's generation.
  const owner = ownerOf(res.locals.principal);
  const caller = owner.apiKeyId ?? `user ${owner.userId}`;
  const claim: IdempotencyClaim = { key, caller, hash: requestHash(caller, req.method, req.path, req.body) };
  res.locals.idempotency = claim;
  next();
}
