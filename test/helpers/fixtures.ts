import { AccountsService } from '../../shared/services/accounts.service';
import type { Db } from '../../shared/db/client';
import type { LimitReset } from '../../shared/billing/periods';
import { money, type Decimal } from '../../shared/money';
import type { Ledger, OpenRow } from '../../shared/billing/ledger';

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

/** A generation's open for `Ledger.open` (the columns GenerationService.create sends, least of them). */
export function openRow(
  organizationId: string,
  id: string,
  opts: { apiKeyId?: string | null; userId?: string | null; bound: string; minimum?: string },
): OpenRow {
  return {
    id, organization_id: organizationId, api_key_id: opts.apiKeyId ?? null, user_id: opts.userId ?? null,
    bound: opts.bound, minimum: opts.minimum ?? opts.bound,
    model: 'm', unified_model_id: 'm', request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync',
  };
}

/** Spends `cost` the way a generation does in production: `Ledger.open` reserves `bound`, `Ledger.close` charges. */
export async function spend(
  ledger: Ledger,
  organizationId: string,
  id: string,
  opts: { apiKeyId?: string | null; userId?: string | null; bound: string; cost: string },
): Promise<void> {
  const opened = await ledger.open(openRow(organizationId, id, opts));
  if (!('granted' in opened)) throw new Error(`${id}: not opened (${JSON.stringify(opened)})`);
  const closed = await ledger.close({ id, status: 'completed', cost: opts.cost });
  if (!closed.applied) throw new Error(`${id}: its close was not applied`);
}
