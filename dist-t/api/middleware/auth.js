"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Authenticator = void 0;
exports.bearerToken = bearerToken;
exports.authMiddleware = authMiddleware;
exports.requireUser = requireUser;
const api_keys_1 = require("../../shared/auth/api-keys");
const tokens_1 = require("../../shared/auth/tokens");
const app_error_1 = require("../../shared/errors/app-error");
const operator_tokens_1 = require("../../shared/auth/operator-tokens");
/**
 * Resolves `Authorization: Bearer ...` to a principal (decisions.md section 2). Lookups are cached for
 * `cacheMs` (1 s by default) to keep the database off the hot path; a revocation through this process
 * takes effect at once, one made elsewhere (another API process, the CLI) within `cacheMs` of its commit
 * (test/faults/key-revocation.fault.ts). At 1 s the cache costs one key lookup per key and second per
 * process, which the profile does not show (bench/README.md), so no cross-process invalidation channel.
 */
class Authenticator {
    db;
    secret;
    cacheMs;
    /** Keyed by the API key itself, not its hash: hashing every request's key showed in the profile. */
    cache = new Map();
    constructor(db, secret, cacheMs = 1000) {
        this.db = db;
        this.secret = secret;
        this.cacheMs = cacheMs;
    }
    async authenticate(header) {
        const token = bearerToken(header);
        if (!token)
            throw new app_error_1.AppError('UNAUTHORIZED', 'Missing or malformed Authorization header: use "Bearer <API key>"');
        if (api_keys_1.KEY_PATTERN.test(token))
            return this.fromKey(token);
        if ((0, tokens_1.looksLikeJwt)(token))
            return this.fromToken(token);
        throw new app_error_1.AppError('UNAUTHORIZED', 'Unknown API key or token');
    }
    forget(keyId) {
        for (const [k, v] of this.cache)
            if (v.keyId === keyId)
                this.cache.delete(k);
    }
    async fromKey(key) {
        const cached = this.cache.get(key);
        let principal;
        if (cached && Date.now() - cached.at < this.cacheMs)
            principal = cached.principal;
        else {
            // The entry's age counts from before the read: a lookup that read the row just before a revocation
            // committed, and answered after it, must not stay cached for a whole cacheMs after the revoking reply.
            const readAt = Date.now();
            const row = await this.db.apiKey.findUnique({ where: { keyHash: (0, api_keys_1.hashApiKey)(key) }, include: { organization: { select: { rateLimitPerMinute: true } } } });
            principal = !row
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
                        };
            if (this.cacheMs > 0) {
                if (this.cache.size > 10_000)
                    this.cache.clear();
                this.cache.set(key, { at: readAt, keyId: row?.id, principal });
            }
        }
        if (principal === 'revoked')
            throw new app_error_1.AppError('api_key_revoked', 'This API key has been revoked');
        if (principal === 'disabled')
            throw new app_error_1.AppError('UNAUTHORIZED', 'This API key is disabled (PATCH /v1/keys/{id} with {"disabled": false} enables it again)');
        if (!principal)
            throw new app_error_1.AppError('UNAUTHORIZED', 'Unknown API key or token');
        return principal;
    }
    async fromToken(token) {
        const claims = (0, tokens_1.verifyToken)(token, this.secret);
        if (!claims && (0, operator_tokens_1.verifyOperatorToken)(token, this.secret)) {
            throw new app_error_1.AppError('FORBIDDEN', 'An operator token opens the queue dashboard only; the API needs an API key or a personal-account token');
        }
        if (!claims)
            throw new app_error_1.AppError('UNAUTHORIZED', 'Invalid or expired token');
        const user = await this.db.user.findUnique({ where: { id: claims.sub }, include: { organization: { select: { rateLimitPerMinute: true } } } });
        if (!user || user.organizationId !== claims.org)
            throw new app_error_1.AppError('UNAUTHORIZED', 'Invalid or expired token');
        return { kind: 'user', organizationId: user.organizationId, userId: user.id, role: user.role, rateLimitPerMinute: user.organization.rateLimitPerMinute };
    }
}
exports.Authenticator = Authenticator;
/** The credential of `Authorization: Bearer <credential>`; the scheme is case-insensitive (RFC 9110 section 11.1). */
function bearerToken(header) {
    return /^bearer +([^\s]+) *$/i.exec(header ?? '')?.[1];
}
function authMiddleware(auth) {
    return async (req, res, next) => {
        try {
            res.locals.principal = await auth.authenticate(req.headers.authorization);
            next();
        }
        catch (e) {
            next(e);
        }
    };
}
/** Routes for personal-account tokens only, with the roles allowed. */
function requireUser(res, roles = ['owner', 'admin', 'member']) {
    const p = res.locals.principal;
    if (p.kind !== 'user')
        throw new app_error_1.AppError('FORBIDDEN', 'This endpoint needs a personal-account token, not an API key');
    if (!roles.includes(p.role))
        throw new app_error_1.AppError('FORBIDDEN', `Your role (${p.role}) may not do this`);
    return p;
}
