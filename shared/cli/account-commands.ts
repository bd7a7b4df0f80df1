import { moneyString } from '../money';
import type { LimitReset } from '../billing/periods';
import type { Role } from '../auth/tokens';
import { CliError, integer, oneOf, rub, str, type Command, type Values } from './command';
import { consoleBaseUrl, inviteUrl, resetUrl } from '../auth/console-links';

const ROLES: Role[] = ['owner', 'admin', 'member'];
const RESETS: LimitReset[] = ['daily', 'weekly', 'monthly', 'never'];
const LIMIT_USAGE = `[--limit RUB --reset ${RESETS.join('|')}]`;

function emailFlag(v: Values, flag: string): string | undefined {
  const email = str(v, flag);
  if (email !== undefined && !/^[^\s@]+@[^\s@]+$/.test(email)) throw new CliError(`--${flag} must be an e-mail address (got "${email}")`);
  return email;
}

function limitFlags(v: Values): { limit?: string; reset?: LimitReset } {
  const limit = rub(v, 'limit');
  const reset = oneOf(v, 'reset', RESETS);
  if (reset && limit === undefined) throw new CliError('--reset needs --limit');
  return { limit, reset };
}

/** The commands of organizations, users, their tokens and API keys (they need the database). */
export const ACCOUNT_COMMANDS: Command[] = [
  {
    group: 'org',
    action: 'create',
    usage: 'org create --name NAME [--balance RUB] [--owner-email E]',
    summary: 'create an organization with its owner; prints the owner token and the callback and webhook secrets (with --owner-email also the owner\'s invite link)',
    flags: ['name', 'balance', 'owner-email'],
    required: ['name'],
    needsDb: true,
    prepare(v, ctx) {
      const input = { name: str(v, 'name')!, balance: rub(v, 'balance'), ownerEmail: emailFlag(v, 'owner-email') };
      return async (accounts) => {
        const r = await accounts.createOrganization(input);
        const invite = r.ownerInviteToken ? { ownerInviteToken: r.ownerInviteToken, ownerInviteUrl: inviteUrl(consoleBaseUrl(ctx.config), r.ownerInviteToken) } : {};
        return {
          json: { organizationId: r.organizationId, ownerUserId: r.ownerUserId, ownerToken: r.ownerToken, callbackSecret: r.callbackSecret, webhookSecret: r.webhookSecret, ...invite },
          text:
            `organization ${r.organizationId} created; owner ${r.ownerUserId}; owner token: ${r.ownerToken}; callback secret: ${r.callbackSecret}; webhook secret: ${r.webhookSecret}` +
            (invite.ownerInviteUrl ? `; owner invite (works once, for 7 days): ${invite.ownerInviteUrl}` : ''),
        };
      };
    },
  },
  {
    group: 'org',
    action: 'topup',
    usage: 'org topup --org ID --amount RUB',
    summary: "add rubles to an organization's balance",
    flags: ['org', 'amount'],
    required: ['org', 'amount'],
    needsDb: true,
    prepare(v) {
      const org = str(v, 'org')!;
      const amount = rub(v, 'amount', { positive: true })!;
      return async (accounts) => {
        const r = await accounts.topUp(org, amount);
        const balance = moneyString(r.balance);
        return { json: { organizationId: r.organizationId, balance }, text: `organization ${r.organizationId} balance: ${balance} RUB` };
      };
    },
  },
  {
    group: 'org',
    action: 'update',
    usage: 'org update --org ID --max-concurrency N|none',
    summary: "set an organization's cap on its jobs running at once (none: no cap)",
    flags: ['org', 'max-concurrency'],
    required: ['org', 'max-concurrency'],
    needsDb: true,
    prepare(v) {
      const org = str(v, 'org')!;
      const maxConcurrency = str(v, 'max-concurrency') === 'none' ? null : integer(v, 'max-concurrency', 1)!;
      return async (accounts) => {
        const r = await accounts.updateOrganization(org, { maxConcurrency });
        return { json: { organizationId: r.organizationId, maxConcurrency: r.maxConcurrency }, text: `organization ${r.organizationId} max concurrency: ${r.maxConcurrency ?? 'none'}` };
      };
    },
  },
  {
    group: 'user',
    action: 'create',
    usage: `user create --org ID --email E --role ${ROLES.join('|')} ${LIMIT_USAGE}`,
    summary: 'add a user to an organization (with an optional personal spending limit); prints its token',
    flags: ['org', 'email', 'role', 'limit', 'reset'],
    required: ['org', 'email', 'role'],
    needsDb: true,
    prepare(v) {
      const email = emailFlag(v, 'email')!;
      const role = oneOf(v, 'role', ROLES)!;
      const input = { organizationId: str(v, 'org')!, email, role, ...limitFlags(v) };
      return async (accounts) => {
        const r = await accounts.createUser(input);
        return { json: { userId: r.userId, token: r.token }, text: `user ${r.userId} (${email}, ${role}) created; token: ${r.token}` };
      };
    },
  },
  {
    group: 'user',
    action: 'invite',
    usage: `user invite --org ID --email E --role ${ROLES.join('|')} ${LIMIT_USAGE}`,
    summary: 'invite a person to an organization: prints the link (works once, for 7 days) where it sets its password',
    flags: ['org', 'email', 'role', 'limit', 'reset'],
    required: ['org', 'email', 'role'],
    needsDb: true,
    prepare(v, ctx) {
      const email = emailFlag(v, 'email')!;
      const role = oneOf(v, 'role', ROLES)!;
      const input = { organizationId: str(v, 'org')!, email, role, ...limitFlags(v) };
      return async (accounts) => {
        const r = await accounts.inviteUser(input);
        const url = inviteUrl(consoleBaseUrl(ctx.config), r.inviteToken);
        return { json: { userId: r.userId, inviteToken: r.inviteToken, inviteUrl: url }, text: `user ${r.userId} (${email}, ${role}) invited: ${url}  (works once, for 7 days)` };
      };
    },
  },
  {
    group: 'user',
    action: 'reset-password',
    usage: 'user reset-password --user ID',
    summary: 'print a link (works once, for 1 hour) where the user sets a new password; using it ends all its sessions',
    flags: ['user'],
    required: ['user'],
    needsDb: true,
    prepare(v, ctx) {
      const user = str(v, 'user')!;
      return async (accounts) => {
        const r = await accounts.resetPassword(user);
        const url = resetUrl(consoleBaseUrl(ctx.config), r.resetToken);
        return { json: { resetToken: r.resetToken, resetUrl: url }, text: `password reset link for ${user}: ${url}  (works once, for 1 hour)` };
      };
    },
  },
  {
    group: 'token',
    action: 'issue',
    usage: 'token issue --user ID [--ttl SECONDS]',
    summary: 'issue a personal-account token for a user (default lifetime 30 days)',
    flags: ['user', 'ttl'],
    required: ['user'],
    needsDb: true,
    prepare(v) {
      const user = str(v, 'user')!;
      const ttl = integer(v, 'ttl', 1);
      return async (accounts) => {
        const r = await accounts.issueToken(user, ttl);
        return { json: { token: r.token }, text: `token: ${r.token}` };
      };
    },
  },
  {
    group: 'key',
    action: 'create',
    usage: `key create --org ID [--user ID] [--name N] ${LIMIT_USAGE} [--models a,b] [--rate-limit PER_MINUTE]`,
    summary: 'create an API key (shown once); --rate-limit 0 means no rate limit',
    flags: ['org', 'user', 'name', 'limit', 'reset', 'models', 'rate-limit'],
    required: ['org'],
    needsDb: true,
    prepare(v) {
      let allowedModels: string[] | undefined;
      const models = str(v, 'models');
      if (models !== undefined) {
        allowedModels = [...new Set(models.split(',').map((m) => m.trim()).filter(Boolean))];
        if (!allowedModels.length) throw new CliError('--models needs at least one model id, e.g. --models openai/gpt-4.1-mini,openai/gpt-4.1');
      }
      const input = {
        organizationId: str(v, 'org')!,
        userId: str(v, 'user'),
        name: str(v, 'name'),
        allowedModels,
        rateLimitPerMinute: integer(v, 'rate-limit', 0),
        ...limitFlags(v),
      };
      // Restrictions set here are the operator's: the key's member may tighten them, never loosen them.
      const lockedFields = [
        ...(input.limit !== undefined ? ['limit'] : []),
        ...(allowedModels ? ['allowed_models'] : []),
        ...(input.rateLimitPerMinute !== undefined ? ['rate_limit_per_minute'] : []),
      ];
      return async (accounts) => {
        const r = await accounts.createKey({ ...input, lockedFields });
        return { json: { id: r.id, key: r.key, label: r.label }, text: `key ${r.id} (${r.label}) created: ${r.key}  (shown once: store it now)` };
      };
    },
  },
  {
    group: 'key',
    action: 'revoke',
    usage: 'key revoke --id ID',
    summary: 'revoke an API key (requests with it then answer 401 api_key_revoked)',
    flags: ['id'],
    required: ['id'],
    needsDb: true,
    prepare(v) {
      const id = str(v, 'id')!;
      return async (accounts) => {
        const r = await accounts.revokeKey(id);
        return { json: { id: r.id, revoked: true }, text: `key ${r.id} revoked` };
      };
    },
  },
];
