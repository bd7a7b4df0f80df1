import { AccountsService } from '../../shared/services/accounts.service';
import type { Db } from '../../shared/db/client';
import type { LimitReset } from '../../shared/billing/periods';

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
