import { Router } from 'express';
import type { AppContext } from '../app-context';
import { requireUser } from '../middleware/auth';
import { check } from '../../shared/schemas/ajv';
import { createMemberSchema, updateMemberSchema, type CreateMemberBody, type UpdateMemberBody } from '../../shared/schemas/members.schema';
import { moneyNumber } from '../../shared/money';
import { limitRemaining } from '../../shared/services/key-info.service';
import { consoleBaseUrl, inviteUrl } from '../../shared/auth/console-links';
import type { Member as User } from '../../shared/services/members.service';

/**
 * Members over HTTP (decisions.md section 8), for personal-account tokens and sessions; API keys get 403. The role
 * rules are shared/auth/member-permissions.ts; another organization's member is a 404.
 */
export function membersRoutes(ctx: AppContext): Router {
  const r = Router();
  const baseUrl = consoleBaseUrl(ctx.config);

  const view = (u: User) => {
    const remaining = limitRemaining(u, ctx.clock());
    return {
      id: u.id,
      email: u.email,
      role: u.role,
      status: u.passwordHash === null ? ('invited' as const) : ('active' as const),
      limit: u.limit === null ? null : moneyNumber(u.limit),
      limitReset: u.limit === null ? null : u.limitReset,
      limitRemaining: remaining === null ? null : moneyNumber(remaining),
      createdAt: u.createdAt.toISOString(),
    };
  };
  const views = async (users: User[]) => (await ctx.keyInfo.unleased('user_id', users)).map(view);

  r.get('/v1/members', ...ctx.readGuard, async (_req, res) => {
    const actor = requireUser(res);
    res.json({ data: await views(await ctx.members.list(actor)) });
  });

  r.post('/v1/members', ...ctx.guard, async (req, res) => {
    const actor = requireUser(res);
    const body = check<CreateMemberBody>(createMemberSchema, req.body ?? {});
    const { member, inviteToken } = await ctx.members.invite(actor, { email: body.email, role: body.role, limit: body.limit, limitReset: body.limit_reset });
    res.status(201).json({ ...(await views([member]))[0], inviteToken, inviteUrl: inviteUrl(baseUrl, inviteToken) });
  });

  r.patch('/v1/members/:id', ...ctx.guard, async (req, res) => {
    const actor = requireUser(res);
    const body = check<UpdateMemberBody>(updateMemberSchema, req.body ?? {});
    const member = await ctx.members.update(actor, String(req.params.id), { role: body.role, limit: body.limit, limitReset: body.limit_reset });
    res.json((await views([member]))[0]);
  });

  r.delete('/v1/members/:id', ...ctx.guard, async (req, res) => {
    const actor = requireUser(res);
    await ctx.members.remove(actor, String(req.params.id));
    res.json({ id: String(req.params.id), deleted: true });
  });
  return r;
}
