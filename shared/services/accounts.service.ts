import type { Db } from '../db/client';
import type { ApiKey } from '../db/generated/client';
import { Ledger } from '../billing/ledger';
import type { KeyChange } from '../runtime/key-changes';
import { money, toStorage, type MoneyLike } from '../money';
import type { LimitReset } from '../billing/periods';
import { generateApiKey, hashApiKey, keyLabel, newSecret } from '../auth/api-keys';
import { newId } from '../ids';
import { signToken, type Role } from '../auth/tokens';
import { AppError } from '../errors/app-error';
import { webhookSecret } from './callbacks.service';
import { hashSecret, newOpaqueSecret } from '../auth/secrets';
import { normalizeEmail, TOKEN_TTL_MS, type UserTokenKind } from './sessions.service';

export const DEFAULT_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

export interface LimitInput {
  limit?: MoneyLike | null;
  reset?: LimitReset | null;
}

export interface CreateKeyInput extends LimitInput {
  organizationId: string;
  userId?: string | null;
  creatorUserId?: string | null;
  name?: string;
  allowedModels?: string[];
  rateLimitPerMinute?: number | null;
  /** Restrictions the key's member may only tighten (docs/key-permissions.md). */
  lockedFields?: string[];
}

export function limitColumns(input: LimitInput): { limit: string | null; limitReset: LimitReset | null } {
  if (input.limit === undefined || input.limit === null) {
    if (input.reset) throw new AppError('BAD_REQUEST', 'A limit period needs a limit');
    return { limit: null, limitReset: null };
  }
  if (money(input.limit).isNegative()) throw new AppError('BAD_REQUEST', 'A limit cannot be negative');
  return { limit: toStorage(input.limit), limitReset: input.reset ?? 'never' };
}

/** Organizations, users, tokens and keys: shared by the CLI and the /v1/keys routes. */
export class AccountsService {
  private readonly ledger: Ledger;

  constructor(
    private readonly db: Db,
    private readonly secret: string,
    private readonly clock: () => Date = () => new Date(),
    /**
     * Told of every change to a key once it committed (the API: this process's key cache and leases at once, the other
     * processes through shared/runtime/key-changes.ts; the CLI: the running processes, over Redis).
     */
    private readonly onKeyChange?: (change: KeyChange) => Promise<void>,
  ) {
    this.ledger = new Ledger(db, clock);
  }

  /**
   * A new organization with its owner. With `ownerEmail` the owner has that address and an invite token to set its
   * password (decisions.md section 8); without, a placeholder address no one signs in with.
   */
  async createOrganization(input: { name: string; balance?: MoneyLike; ownerEmail?: string }) {
    const organizationId = newId('org');
    const ownerUserId = newId('usr');
    const callbackSecret = newSecret();
    const email = input.ownerEmail !== undefined ? normalizeEmail(input.ownerEmail) : `owner@${organizationId}`;
    await this.uniqueEmail(email, () =>
      this.db.$transaction([
        this.db.organization.create({ data: { id: organizationId, name: input.name, callbackSecret } }),
        this.db.user.create({ data: { id: ownerUserId, organizationId, email, role: 'owner' } }),
      ]),
    );
    if (input.balance !== undefined && money(input.balance).greaterThan(0)) await this.ledger.topUp(organizationId, input.balance);
    const ownerToken = this.issueTokenFor(ownerUserId, organizationId, 'owner');
    const ownerInviteToken = input.ownerEmail !== undefined ? await this.issueUserToken(ownerUserId, 'invite') : undefined;
    return { organizationId, ownerUserId, ownerToken, ownerInviteToken, callbackSecret, webhookSecret: webhookSecret(callbackSecret) };
  }

  /** A user who is to set its password by the invite token returned (a link: shared/auth/console-links.ts). */
  async inviteUser(input: { organizationId: string; email: string; role: Role } & LimitInput) {
    const { userId } = await this.createUser(input);
    return { userId, inviteToken: await this.issueUserToken(userId, 'invite') };
  }

  /** A password-reset token for a user (works for an hour; using it ends every session of the user). */
  async resetPassword(userId: string) {
    const user = await this.db.user.findUnique({ where: { id: userId } });
    if (!user || user.removedAt) throw new AppError('NOT_FOUND', `User ${userId} not found`);
    return { resetToken: await this.issueUserToken(userId, 'reset') };
  }

  /** A new one-time token of the user: only its hash is stored. */
  private async issueUserToken(userId: string, kind: UserTokenKind): Promise<string> {
    const token = newOpaqueSecret(kind === 'invite' ? 'syi_' : 'syr_');
    await this.db.userToken.create({ data: { tokenHash: hashSecret(token), userId, kind, expiresAt: new Date(this.clock().getTime() + TOKEN_TTL_MS[kind]) } });
    return token;
  }

  /** One e-mail, one user in the whole installation: a second is a 409 (the CLI exits 1). */
  private async uniqueEmail<T>(email: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (e) {
      if ((e as { code?: string }).code === 'P2002') throw new AppError('CONFLICT', `A user with the e-mail ${email} already exists (one e-mail is one user in the whole installation)`);
      throw e;
    }
  }

  async topUp(organizationId: string, amount: MoneyLike) {
    if (!money(amount).greaterThan(0)) throw new AppError('BAD_REQUEST', 'The amount must be positive');
    const balance = await this.ledger.topUp(organizationId, amount);
    if (!balance) throw new AppError('NOT_FOUND', `Organization ${organizationId} not found`);
    return { organizationId, balance };
  }

  /** The operator's settings of an organization: `maxConcurrency` caps its jobs running at once (null: no cap). */
  async updateOrganization(organizationId: string, patch: { maxConcurrency?: number | null }) {
    const r = await this.db.organization.updateMany({ where: { id: organizationId }, data: { ...(patch.maxConcurrency !== undefined && { maxConcurrency: patch.maxConcurrency }), updatedAt: new Date() } });
    if (r.count === 0) throw new AppError('NOT_FOUND', `Organization ${organizationId} not found`);
    const org = await this.db.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { id: true, maxConcurrency: true } });
    return { organizationId: org.id, maxConcurrency: org.maxConcurrency };
  }

  async createUser(input: { organizationId: string; email: string; role: Role } & LimitInput) {
    const org = await this.db.organization.findUnique({ where: { id: input.organizationId } });
    if (!org) throw new AppError('NOT_FOUND', `Organization ${input.organizationId} not found`);
    const userId = newId('usr');
    const email = normalizeEmail(input.email);
    await this.uniqueEmail(email, () => this.db.user.create({ data: { id: userId, organizationId: input.organizationId, email, role: input.role, ...limitColumns(input) } }));
    return { userId, token: this.issueTokenFor(userId, input.organizationId, input.role) };
  }

  async issueToken(userId: string, ttlSeconds = DEFAULT_TOKEN_TTL_SECONDS) {
    const user = await this.db.user.findUnique({ where: { id: userId } });
    if (!user) throw new AppError('NOT_FOUND', `User ${userId} not found`);
    return { token: this.issueTokenFor(user.id, user.organizationId, user.role, ttlSeconds) };
  }

  async createKey(input: CreateKeyInput) {
    const org = await this.db.organization.findUnique({ where: { id: input.organizationId } });
    if (!org) throw new AppError('NOT_FOUND', `Organization ${input.organizationId} not found`);
    if (input.userId) {
      const user = await this.db.user.findUnique({ where: { id: input.userId } });
      if (!user || user.organizationId !== input.organizationId) throw new AppError('NOT_FOUND', `User ${input.userId} not found in this organization`);
    }
    const key = generateApiKey();
    const id = newId('key');
    const record = await this.db.apiKey.create({
      data: {
        id,
        organizationId: input.organizationId,
        userId: input.userId ?? null,
        creatorUserId: input.creatorUserId ?? input.userId ?? null,
        name: input.name ?? 'default',
        keyHash: hashApiKey(key),
        label: keyLabel(key),
        allowedModels: input.allowedModels ?? [],
        rateLimitPerMinute: input.rateLimitPerMinute ?? null,
        lockedFields: input.lockedFields ?? [],
        ...limitColumns(input),
      },
    });
    return { id, key, label: record.label, record };
  }

  /** A key by id, or null. */
  findKey(id: string): Promise<ApiKey | null> {
    return this.db.apiKey.findUnique({ where: { id } });
  }

  /** An organization's keys, newest first; with `userId` only that user's. */
  listKeys(organizationId: string, userId?: string): Promise<ApiKey[]> {
    return this.db.apiKey.findMany({ where: { organizationId, ...(userId !== undefined ? { userId } : {}) }, orderBy: { createdAt: 'desc' } });
  }

  async revokeKey(id: string) {
    const found = await this.db.apiKey.findUnique({ where: { id } });
    if (!found) throw new AppError('NOT_FOUND', `Key ${id} not found`);
    if (!found.revokedAt) await this.db.apiKey.update({ where: { id }, data: { revokedAt: this.clock(), updatedAt: this.clock() } });
    await this.changed(id, true);
    return { id, revoked: true as const };
  }

  /**
   * A new period for a key's present limit, as `limitColumns` sets one with a limit: none (null) is `never`; a
   * period without a limit is refused (a key without a limit shows none: interface.md, GET /v1/key).
   */
  private async periodFor(id: string, reset: LimitReset | null): Promise<LimitReset | null> {
    const found = await this.db.apiKey.findUnique({ where: { id }, select: { limit: true } });
    if (!found) throw new AppError('NOT_FOUND', `Key ${id} not found`);
    if (found.limit !== null) return reset ?? 'never';
    if (reset !== null) throw new AppError('BAD_REQUEST', 'A limit period needs a limit');
    return null;
  }

  /** Changes a key that is not revoked (revocation is final: a revoked key is a 409). */
  async updateKey(id: string, patch: { name?: string; allowedModels?: string[]; rateLimitPerMinute?: number | null; disabled?: boolean; lockedFields?: string[] } & LimitInput) {
    const data: Record<string, unknown> = { updatedAt: this.clock() };
    if (patch.name !== undefined) data.name = patch.name;
    if (patch.allowedModels !== undefined) data.allowedModels = patch.allowedModels;
    if (patch.rateLimitPerMinute !== undefined) data.rateLimitPerMinute = patch.rateLimitPerMinute;
    if (patch.limit !== undefined) Object.assign(data, limitColumns(patch));
    else if (patch.reset !== undefined) data.limitReset = await this.periodFor(id, patch.reset);
    if (patch.disabled !== undefined) data.disabledAt = patch.disabled ? this.clock() : null;
    if (patch.lockedFields !== undefined) data.lockedFields = patch.lockedFields;
    // Conditional on "not revoked": a revocation racing this update wins.
    const { count } = await this.db.apiKey.updateMany({ where: { id, revokedAt: null }, data });
    if (count === 0) throw new AppError('CONFLICT', `Key ${id} is revoked: a revoked key is final and cannot be changed or enabled again`);
    await this.changed(id, patch.limit !== undefined || patch.reset !== undefined || patch.disabled === true);
    return this.db.apiKey.findUniqueOrThrow({ where: { id } });
  }

  /**
   * Keys changed elsewhere (a member removed, its keys revoked in that transaction; a member's limit changed, which
   * bounds its keys' spending): every process is told, and the leases taken under the old terms are revoked.
   */
  async keysChanged(ids: string[]): Promise<void> {
    for (const id of ids) await this.changed(id, true);
  }

  /**
   * A key changed. When its terms did (`terms`), money leased under the old ones (shared/billing/leases.ts) is not drawn
   * from again: its leases are revoked in PostgreSQL (a process not told learns it at its next renewal); requests
   * already granted from them keep what they drew.
   */
  private async changed(id: string, terms: boolean): Promise<void> {
    await this.onKeyChange?.({ keyId: id, terms });
    if (terms) await this.ledger.revokeLeasesOfKey(id);
  }

  private issueTokenFor(userId: string, org: string, role: Role, ttlSeconds = DEFAULT_TOKEN_TTL_SECONDS): string {
    const now = this.clock().getTime();
    return signToken({ sub: userId, org, role, exp: Math.floor(now / 1000) + ttlSeconds }, this.secret, now);
  }
}

export type { ApiKey };
