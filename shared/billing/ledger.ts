import type { Db } from '../db/client';
import { AppError } from '../errors/app-error';
import { money, toStorage, type Decimal, type MoneyLike } from './money';

export type ReserveRefusal = 'balance_insufficient' | 'key_limit_exceeded' | 'member_limit_exceeded';

export interface ReserveInput {
  generationId: string;
  organizationId: string;
  apiKeyId?: string | null;
  userId?: string | null;
  /** The upper bound of the cost. */
  amount: MoneyLike;
  /** The least that still lets the request run (text requests can shrink max_output_tokens); defaults to amount. */
  minimum?: MoneyLike;
}

export type SettleOutcome = 'charged' | 'released' | 'already_settled' | 'not_found';

const REFUSAL_MESSAGES: Record<ReserveRefusal, string> = {
  balance_insufficient: 'Insufficient funds: the organization balance does not cover this request',
  key_limit_exceeded: 'The spending limit of this API key is reached for the current period',
  member_limit_exceeded: 'Your personal spending limit is reached for the current period',
};

/**
 * The money core: reserve → charge / release. Each call is one atomic SQL function (see the
 * money_functions migration), idempotent per generation id, safe under any concurrency.
 * Money moves only through this module.
 */
export class Ledger {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Reserves up to `amount` (at least `minimum`); returns the granted amount or throws 402. */
  async reserve(input: ReserveInput): Promise<Decimal> {
    const rows = await this.db.$queryRaw<Array<{ granted: string; reason: string | null }>>`
      SELECT granted::text AS granted, reason FROM sy_reserve(${input.generationId}, ${input.organizationId},
        ${input.apiKeyId ?? null}, ${input.userId ?? null}, ${toStorage(input.amount)}::numeric,
        ${toStorage(input.minimum ?? input.amount)}::numeric, ${this.clock()}::timestamptz)`;
    const { granted, reason } = rows[0];
    if (reason === 'not_found') throw new AppError('NOT_FOUND', 'Organization not found');
    if (reason) throw AppError.fromReason(reason as ReserveRefusal, REFUSAL_MESSAGES[reason as ReserveRefusal]);
    return money(granted);
  }

  /** Charges the real cost and frees the rest of the reservation. Running it twice charges once. */
  charge(generationId: string, actual: MoneyLike): Promise<{ outcome: SettleOutcome; charged: Decimal }> {
    return this.settle(generationId, actual, false);
  }

  /** Frees the whole reservation: failed and cancelled generations cost nothing. */
  release(generationId: string): Promise<{ outcome: SettleOutcome; charged: Decimal }> {
    return this.settle(generationId, 0, true);
  }

  async topUp(organizationId: string, amount: MoneyLike): Promise<Decimal | null> {
    const rows = await this.db.$queryRaw<Array<{ balance: string | null }>>`
      SELECT sy_topup(${organizationId}, ${toStorage(amount)}::numeric, ${this.clock()}::timestamptz)::text AS balance`;
    return rows[0].balance === null ? null : money(rows[0].balance);
  }

  private async settle(generationId: string, actual: MoneyLike, release: boolean) {
    const rows = await this.db.$queryRaw<Array<{ outcome: SettleOutcome; charged: string }>>`
      SELECT outcome, charged::text AS charged FROM sy_settle(${generationId}, ${toStorage(actual)}::numeric,
        ${release}, ${this.clock()}::timestamptz)`;
    return { outcome: rows[0].outcome, charged: money(rows[0].charged) };
  }
}
