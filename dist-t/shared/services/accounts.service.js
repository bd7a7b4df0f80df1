"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.AccountsService = exports.DEFAULT_TOKEN_TTL_SECONDS = void 0;
const ledger_1 = require("../billing/ledger");
const money_1 = require("../billing/money");
const api_keys_1 = require("../auth/api-keys");
const tokens_1 = require("../auth/tokens");
const app_error_1 = require("../errors/app-error");
exports.DEFAULT_TOKEN_TTL_SECONDS = 30 * 24 * 3600;
function limitColumns(input) {
    if (input.limit === undefined || input.limit === null) {
        if (input.reset)
            throw new app_error_1.AppError('BAD_REQUEST', 'A limit period needs a limit');
        return { limit: null, limitReset: null };
    }
    if ((0, money_1.money)(input.limit).isNegative())
        throw new app_error_1.AppError('BAD_REQUEST', 'A limit cannot be negative');
    return { limit: (0, money_1.toStorage)(input.limit), limitReset: input.reset ?? 'never' };
}
/** Organizations, users, tokens and keys: shared by the CLI and the /v1/keys routes. */
class AccountsService {
    db;
    secret;
    clock;
    ledger;
    constructor(db, secret, clock = () => new Date()) {
        this.db = db;
        this.secret = secret;
        this.clock = clock;
        this.ledger = new ledger_1.Ledger(db, clock);
    }
    async createOrganization(input) {
        const organizationId = (0, api_keys_1.newId)('org');
        const ownerUserId = (0, api_keys_1.newId)('usr');
        const callbackSecret = (0, api_keys_1.newSecret)();
        await this.db.$transaction([
            this.db.organization.create({ data: { id: organizationId, name: input.name, callbackSecret } }),
            this.db.user.create({ data: { id: ownerUserId, organizationId, email: `owner@${organizationId}`, role: 'owner' } }),
        ]);
        if (input.balance !== undefined && (0, money_1.money)(input.balance).greaterThan(0))
            await this.ledger.topUp(organizationId, input.balance);
        return { organizationId, ownerUserId, ownerToken: this.issueTokenFor(ownerUserId, organizationId, 'owner'), callbackSecret };
    }
    async topUp(organizationId, amount) {
        if (!(0, money_1.money)(amount).greaterThan(0))
            throw new app_error_1.AppError('BAD_REQUEST', 'The amount must be positive');
        const balance = await this.ledger.topUp(organizationId, amount);
        if (!balance)
            throw new app_error_1.AppError('NOT_FOUND', `Organization ${organizationId} not found`);
        return { organizationId, balance };
    }
    async createUser(input) {
        const org = await this.db.organization.findUnique({ where: { id: input.organizationId } });
        if (!org)
            throw new app_error_1.AppError('NOT_FOUND', `Organization ${input.organizationId} not found`);
        const userId = (0, api_keys_1.newId)('usr');
        await this.db.user.create({ data: { id: userId, organizationId: input.organizationId, email: input.email, role: input.role, ...limitColumns(input) } });
        return { userId, token: this.issueTokenFor(userId, input.organizationId, input.role) };
    }
    async issueToken(userId, ttlSeconds = exports.DEFAULT_TOKEN_TTL_SECONDS) {
        const user = await this.db.user.findUnique({ where: { id: userId } });
        if (!user)
            throw new app_error_1.AppError('NOT_FOUND', `User ${userId} not found`);
        return { token: this.issueTokenFor(user.id, user.organizationId, user.role, ttlSeconds) };
    }
    async createKey(input) {
        const org = await this.db.organization.findUnique({ where: { id: input.organizationId } });
        if (!org)
            throw new app_error_1.AppError('NOT_FOUND', `Organization ${input.organizationId} not found`);
        if (input.userId) {
            const user = await this.db.user.findUnique({ where: { id: input.userId } });
            if (!user || user.organizationId !== input.organizationId)
                throw new app_error_1.AppError('NOT_FOUND', `User ${input.userId} not found in this organization`);
        }
        const key = (0, api_keys_1.generateApiKey)();
        const id = (0, api_keys_1.newId)('key');
        const record = await this.db.apiKey.create({
            data: {
                id,
                organizationId: input.organizationId,
                userId: input.userId ?? null,
                creatorUserId: input.creatorUserId ?? input.userId ?? null,
                name: input.name ?? 'default',
                keyHash: (0, api_keys_1.hashApiKey)(key),
                label: (0, api_keys_1.keyLabel)(key),
                allowedModels: input.allowedModels ?? [],
                rateLimitPerMinute: input.rateLimitPerMinute ?? null,
                lockedFields: input.lockedFields ?? [],
                ...limitColumns(input),
            },
        });
        return { id, key, label: record.label, record };
    }
    /** A key by id, or null. */
    findKey(id) {
        return this.db.apiKey.findUnique({ where: { id } });
    }
    /** An organization's keys, newest first; with `userId` only that user's. */
    listKeys(organizationId, userId) {
        return this.db.apiKey.findMany({ where: { organizationId, ...(userId !== undefined ? { userId } : {}) }, orderBy: { createdAt: 'desc' } });
    }
    async revokeKey(id) {
        const found = await this.db.apiKey.findUnique({ where: { id } });
        if (!found)
            throw new app_error_1.AppError('NOT_FOUND', `Key ${id} not found`);
        if (!found.revokedAt)
            await this.db.apiKey.update({ where: { id }, data: { revokedAt: this.clock(), updatedAt: this.clock() } });
        return { id, revoked: true };
    }
    /** Changes a key that is not revoked (revocation is final: a revoked key is a 409). */
    async updateKey(id, patch) {
        const data = { updatedAt: this.clock() };
        if (patch.name !== undefined)
            data.name = patch.name;
        if (patch.allowedModels !== undefined)
            data.allowedModels = patch.allowedModels;
        if (patch.rateLimitPerMinute !== undefined)
            data.rateLimitPerMinute = patch.rateLimitPerMinute;
        if (patch.limit !== undefined)
            Object.assign(data, limitColumns(patch));
        else if (patch.reset !== undefined)
            data.limitReset = patch.reset;
        if (patch.disabled !== undefined)
            data.disabledAt = patch.disabled ? this.clock() : null;
        if (patch.lockedFields !== undefined)
            data.lockedFields = patch.lockedFields;
        // Conditional on "not revoked": a revocation racing this update wins.
        const { count } = await this.db.apiKey.updateMany({ where: { id, revokedAt: null }, data });
        if (count === 0)
            throw new app_error_1.AppError('CONFLICT', `Key ${id} is revoked: a revoked key is final and cannot be changed or enabled again`);
        return this.db.apiKey.findUniqueOrThrow({ where: { id } });
    }
    issueTokenFor(userId, org, role, ttlSeconds = exports.DEFAULT_TOKEN_TTL_SECONDS) {
        const now = this.clock().getTime();
        return (0, tokens_1.signToken)({ sub: userId, org, role, exp: Math.floor(now / 1000) + ttlSeconds }, this.secret, now);
    }
}
exports.AccountsService = AccountsService;
