import type { Db } from '../db/client';
import type { User } from '../db/generated/client';
import { AppError } from '../errors/app-error';
import { authorizeInvite, authorizeMemberChange, seesEveryMember, type Actor } from '../auth/member-permissions';
import type { Role } from '../auth/tokens';
import type { LimitReset } from '../billing/periods';
import { limitColumns, type AccountsService } from './accounts.service';

export type { User as Member };

type Tx = Parameters<Parameters<Db['$transaction']>[0]>[0];

export interface MemberPatch {
  role?: Role;
  limit?: number | string | null;
  limitReset?: LimitReset | null;
}

/**
 * Members over HTTP (decisions.md section 8): what the CLI's `user` commands do, under the role rules of
 * shared/auth/member-permissions.ts. Changes of one organization's members are serialized by an advisory lock of the
 * organization (not its row: the ledger updates that row on every settlement), so two owners demoting each other at
 * once cannot leave it without an owner.
 */
export class MembersService {
  constructor(
    private readonly db: Db,
    private readonly accounts: AccountsService,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The members the actor may see (owner and admin: everyone; a member: itself), oldest first. */
  list(actor: Actor & { organizationId: string }): Promise<User[]> {
    return this.db.user.findMany({
      where: { organizationId: actor.organizationId, removedAt: null, ...(seesEveryMember(actor) ? {} : { id: actor.userId }) },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    });
  }

  async invite(actor: Actor & { organizationId: string }, input: { email: string; role: Role; limit?: number | string | null; limitReset?: LimitReset | null }) {
    authorizeInvite(actor, input.role);
    const { userId, inviteToken } = await this.accounts.inviteUser({ organizationId: actor.organizationId, email: input.email, role: input.role, limit: input.limit, reset: input.limitReset });
    return { member: await this.db.user.findUniqueOrThrow({ where: { id: userId } }), inviteToken };
  }

  async update(actor: Actor & { organizationId: string }, id: string, patch: MemberPatch): Promise<User> {
    const keys = await this.db.$transaction(async (tx) => {
      const target = await this.lockedTarget(tx, actor.organizationId, id);
      authorizeMemberChange(actor, target, { role: patch.role });
      if (target.role === 'owner' && patch.role !== undefined && patch.role !== 'owner') await this.notLastOwner(tx, actor.organizationId, 'demoted');
      const data: Record<string, unknown> = {};
      if (patch.role !== undefined) data.role = patch.role;
      if (patch.limit !== undefined) Object.assign(data, limitColumns({ limit: patch.limit, reset: patch.limitReset ?? (patch.limit === null ? null : target.limitReset ?? 'never') }));
      else if (patch.limitReset !== undefined) {
        if (target.limit === null && patch.limitReset !== null) throw new AppError('BAD_REQUEST', 'A limit period needs a limit');
        data.limitReset = target.limit === null ? null : (patch.limitReset ?? 'never');
      }
      await tx.user.update({ where: { id }, data });
      if (patch.limit === undefined && patch.limitReset === undefined) return [];
      return (await tx.apiKey.findMany({ where: { userId: id, revokedAt: null }, select: { id: true } })).map((k) => k.id);
    });
    // Its limit bounds its keys' spending: money leased under the old limit is not drawn from again.
    await this.accounts.keysChanged(keys);
    return this.db.user.findUniqueOrThrow({ where: { id } });
  }

  /** Removes a member: its sessions end, its open tokens die, its keys are revoked for good; it signs in no more. */
  async remove(actor: Actor & { organizationId: string }, id: string): Promise<void> {
    const now = this.clock();
    const revoked = await this.db.$transaction(async (tx) => {
      const target = await this.lockedTarget(tx, actor.organizationId, id);
      authorizeMemberChange(actor, target, 'remove');
      if (target.role === 'owner') await this.notLastOwner(tx, actor.organizationId, 'removed');
      await tx.user.update({ where: { id }, data: { removedAt: now } });
      await tx.session.deleteMany({ where: { userId: id } });
      await tx.userToken.updateMany({ where: { userId: id, usedAt: null }, data: { usedAt: now } });
      const keys = await tx.$queryRaw<Array<{ id: string }>>`
        UPDATE api_keys SET revoked_at = ${now}, updated_at = ${now} WHERE user_id = ${id} AND revoked_at IS NULL RETURNING id`;
      return keys.map((k) => k.id);
    });
    await this.accounts.keysChanged(revoked);
  }

  /** The member `id` of the organization, locked with the organization's member changes; 404 when not there. */
  private async lockedTarget(tx: Tx, organizationId: string, id: string): Promise<User> {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`sy_members:${organizationId}`}))`;
    const target = await tx.user.findFirst({ where: { id, organizationId, removedAt: null } });
    if (!target) throw new AppError('NOT_FOUND', `Member ${id} not found`);
    return target;
  }

  private async notLastOwner(tx: Tx, organizationId: string, what: 'demoted' | 'removed'): Promise<void> {
    const owners = await tx.user.count({ where: { organizationId, role: 'owner', removedAt: null } });
    if (owners <= 1) throw new AppError('CONFLICT', `The last owner of the organization cannot be ${what}: make another member owner first`);
  }
}
