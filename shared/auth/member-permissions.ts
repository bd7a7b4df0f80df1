import { AppError } from '../errors/app-error';
import type { Role } from './tokens';

/**
 * Who may do what to the members of an organization (decisions.md section 8), in one place. Owner and admin manage
 * members; a member sees only itself and changes nothing. An admin never touches an owner nor makes one; nobody
 * changes their own role. The last owner can be neither demoted nor removed: that needs the organization's owners
 * counted under a lock (shared/services/members.service.ts), so it is not decided here.
 */
export interface Actor {
  userId: string;
  role: Role;
}

/** Whether the actor sees every member (else only itself). */
export const seesEveryMember = (actor: Actor): boolean => actor.role !== 'member';

/** Inviting a member of `role`: owner any role; admin an admin or a member; a member nobody. */
export function authorizeInvite(actor: Actor, role: Role): void {
  if (actor.role === 'member') throw new AppError('FORBIDDEN', 'A member may not invite members');
  if (actor.role === 'admin' && role === 'owner') throw new AppError('FORBIDDEN', 'An admin may invite admins and members, not owners');
}

/** Changing (role, limit) or removing `target`. */
export function authorizeMemberChange(actor: Actor, target: { id: string; role: Role }, change: { role?: Role } | 'remove'): void {
  if (actor.role === 'member') throw new AppError('FORBIDDEN', 'A member may not change or remove members');
  if (actor.role === 'admin' && target.role === 'owner') throw new AppError('FORBIDDEN', 'An admin may not change or remove an owner');
  if (change === 'remove') return;
  if (change.role !== undefined && change.role !== target.role) {
    if (target.id === actor.userId) throw new AppError('FORBIDDEN', 'Nobody changes their own role');
    if (actor.role === 'admin' && change.role === 'owner') throw new AppError('FORBIDDEN', 'An admin may not make an owner');
  }
}
