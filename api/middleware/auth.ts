import type { IdempotentRequest } from '../../shared/services/generation.service';
import type { NextFunction, Request, Response } from 'express';
import type { Db } from '../../shared/db/client';
import { hashApiKey, KEY_PATTERN } from '../../shared/auth/api-keys';
import { looksLikeJwt, verifyToken, type Role } from '../../shared/auth/tokens';
import { AppError } from '../../shared/errors/app-error';
import { verifyOperatorToken } from '../../shared/auth/operator-tokens';
import { ownerOf, type Principal } from '../../shared/auth/principal';
import { sessionCookieOf, type RequestSession, type SessionGate } from './session';
import { createHash } from 'node:crypto';

declare module 'express-serve-static-core' {
  interface Locals {
    principal: Principal;
    traceId: string;
    /** Set by the idempotency middleware from the `Idempotency-Key` header. */
    idempotency?: IdempotentRequest;
    /** The browser session the request came with, when the `sy_session` cookie authenticated it (api/middleware/session.ts). */
    session?: RequestSession;
  }
}

interface CacheEntry {
  at: number;
  keyId?: string;
  principal: Principal | 'revoked' | 'disabled' | null;
}

/**
 * Resolves `Authorization: Bearer ...` to a principal (decisions.md section 2). Lookups are cached for
 * `cacheMs` (1 s by default) to keep the database off the hot path. A key changed through the API is forgotten by every
 * API process: by this one before it answers, by the others as the change's message arrives
 * (shared/runtime/key-changes.ts). One changed where no message is sent (the CLI), or whose message is lost, is seen
 * within `cacheMs` of its commit (test/faults/key-revocation.fault.ts).
 */
export class Authenticator {
  /** Keyed by the API key itself, not its hash: hashing every request's key showed in the profile. */
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly db: Db,
    private readonly secret: string,
    private readonly cacheMs = 1000,
  ) {}

  async authenticate(header: string | undefined): Promise<Principal> {
    const token = bearerToken(header);
    if (!token) throw new AppError('UNAUTHORIZED', 'Missing or malformed Authorization header: use "Bearer <API key>"');
    if (!KEY_PATTERN.test(token)) {
      if (looksLikeJwt(token)) return this.fromToken(token);
      throw new AppError('UNAUTHORIZED', 'Unknown API key or token');
    }
    const cached = this.cache.get(token);
    const principal = cached && Date.now() - cached.at < this.cacheMs ? cached.principal : await this.readKey(token);
    if (principal === 'revoked') throw new AppError('api_key_revoked', 'This API key has been revoked');
    if (principal === 'disabled') throw new AppError('UNAUTHORIZED', 'This API key is disabled (PATCH /v1/keys/{id} with {"disabled": false} enables it again)');
    if (!principal) throw new AppError('UNAUTHORIZED', 'Unknown API key or token');
    return principal;
  }

  forget(keyId: string): void {
    for (const [k, v] of this.cache) if (v.keyId === keyId) this.cache.delete(k);
  }

  /** An API key's principal (or why it has none) as its row says now; kept for `cacheMs`. */
  private async readKey(key: string): Promise<CacheEntry['principal']> {
    // The entry's age counts from before the read: a lookup that read the row just before a revocation
    // committed, and answered after it, must not stay cached for a whole cacheMs after the revoking reply.
    const readAt = Date.now();
    const row = await this.db.apiKey.findUnique({ where: { keyHash: hashApiKey(key) }, include: { organization: { select: { rateLimitPerMinute: true, maxConcurrency: true } } } });
    const principal: CacheEntry['principal'] = !row
      ? null
      : row.revokedAt
        ? 'revoked'
        : row.disabledAt
          ? 'disabled'
          : {
            kind: 'key',
            organizationId: row.organizationId,
            keyId: row.id,
            userId: row.userId,
            allowedModels: row.allowedModels,
            rateLimitPerMinute: row.rateLimitPerMinute ?? row.organization.rateLimitPerMinute,
            maxConcurrency: row.organization.maxConcurrency,
          };
    if (this.cacheMs > 0) {
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(key, { at: readAt, keyId: row?.id, principal });
    }
    return principal;
  }

  private async fromToken(token: string): Promise<Principal> {
    const claims = verifyToken(token, this.secret);
    if (!claims && verifyOperatorToken(token, this.secret)) {
      throw new AppError('FORBIDDEN', 'An operator token opens the queue dashboard only; the API needs an API key or a personal-account token');
    }
    if (!claims) throw new AppError('UNAUTHORIZED', 'Invalid or expired token');
    const user = await this.db.user.findUnique({ where: { id: claims.sub }, include: { organization: { select: { rateLimitPerMinute: true, maxConcurrency: true } } } });
    if (!user || user.organizationId !== claims.org || user.removedAt) throw new AppError('UNAUTHORIZED', 'Invalid or expired token');
    return { kind: 'user', organizationId: user.organizationId, userId: user.id, role: user.role, rateLimitPerMinute: user.organization.rateLimitPerMinute, maxConcurrency: user.organization.maxConcurrency };
  }
}

/** The credential of `Authorization: Bearer <credential>`; the scheme is case-insensitive (RFC 9110 section 11.1). */
export function bearerToken(header: string | undefined): string | undefined {
  return /^bearer +([^\s]+) *$/i.exec(header ?? '')?.[1];
}

/**
 * The principal of a request: by its `Authorization` header alone when it has one; else by its `sy_session` cookie
 * (with the CSRF and Origin checks of unsafe methods, api/middleware/session.ts).
 */
export function authMiddleware(auth: Authenticator, sessions?: SessionGate) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const cookie = req.headers.authorization === undefined && sessions ? sessionCookieOf(req.headers.cookie) : undefined;
      if (cookie !== undefined) {
        const session = await sessions!.authenticate(req, cookie);
        res.locals.session = session;
        res.locals.principal = session.principal;
        return next();
      }
      res.locals.principal = await auth.authenticate(req.headers.authorization);
      next();
    } catch (e) {
      next(e);
    }
  };
}

/** Routes for personal-account tokens only, with the roles allowed. */
export function requireUser(res: Response, roles: Role[] = ['owner', 'admin', 'member']): Extract<Principal, { kind: 'user' }> {
  const p = res.locals.principal;
  if (p.kind !== 'user') throw new AppError('FORBIDDEN', 'This endpoint needs a personal-account token, not an API key');
  if (!roles.includes(p.role)) throw new AppError('FORBIDDEN', `Your role (${p.role}) may not do this`);
  return p;
}

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
 * pass it to the gateway, which records the key with the generation (docs/idempotency.md). Other routes ignore it.
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
  const request: IdempotentRequest = { key, caller, hash: requestHash(caller, req.method, req.path, req.body) };
  res.locals.idempotency = request;
  next();
}
