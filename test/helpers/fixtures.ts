import { AccountsService } from '../../shared/services/accounts.service';
import type { Db } from '../../shared/db/client';
import type { LimitReset } from '../../shared/billing/periods';
import { money, type Decimal } from '../../shared/money';

export const TEST_SECRET = 'test-secret-not-for-production';

/** An organization with an owner, a member and keys, in a few lines. */
export async function seedOrg(db: Db, opts: { balance?: string; clock?: () => Date } = {}) {
  const accounts = new AccountsService(db, TEST_SECRET, opts.clock);
  const org = await accounts.createOrganization({ name: 'Acme', balance: opts.balance ?? '1000' });
  return { accounts, ...org };
}

export async function seedKey(
  accounts: AccountsService,
  organizationId: string,
  opts: { userId?: string; limit?: string; reset?: LimitReset; models?: string[]; name?: string; rateLimitPerMinute?: number } = {},
) {
  return accounts.createKey({
    organizationId,
    userId: opts.userId,
    name: opts.name,
    limit: opts.limit,
    reset: opts.reset,
    allowedModels: opts.models,
    rateLimitPerMinute: opts.rateLimitPerMinute,
  });
}

/**
 * An organization's balance, and what its requests hold reserved: its `reserved` less what its open leases hold
 * (money set aside for requests still to come, docs/architecture.md "Leases"; /v2/balance leaves it out the same way).
 */
export async function orgMoney(db: Db, organizationId: string): Promise<{ balance: Decimal; reserved: Decimal }> {
  const [o] = await db.$queryRaw<Array<{ balance: string; reserved: string; leased: string }>>`
    SELECT o.balance::text, o.reserved::text,
           (SELECT COALESCE(SUM(r.amount), 0) FROM reservations r
             WHERE r.organization_id = o.id AND r.expires_at IS NOT NULL AND r.status = 'held')::text AS leased
      FROM organizations o WHERE o.id = ${organizationId}`;
  if (!o) throw new Error(`no organization ${organizationId}`);
  return { balance: money(o.balance), reserved: money(o.reserved).minus(money(o.leased)) };
}
