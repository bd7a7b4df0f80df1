import { Prisma } from '../db/generated/client';

/** Exact decimal money (decimal.js through Prisma). Floats never hold money. */
export const Decimal = Prisma.Decimal;
export type Decimal = Prisma.Decimal;
export type MoneyLike = Decimal | string | number;

export const ZERO = new Decimal(0);

export function money(value: MoneyLike | null | undefined): Decimal {
  return value === null || value === undefined ? ZERO : new Decimal(value);
}

/** Decimal string with exactly 6 places, as replies show money (decisions.md section 4). */
export function moneyString(value: MoneyLike): string {
  return money(value).toDecimalPlaces(6, Decimal.ROUND_HALF_UP).toFixed(6);
}

/** JSON number rounded to 6 places. */
export function moneyNumber(value: MoneyLike): number {
  return Number(money(value).toDecimalPlaces(6, Decimal.ROUND_HALF_UP).toFixed(6));
}

/** Amounts are kept to 10 decimal places in the database. */
export function toStorage(value: MoneyLike): string {
  return money(value).toDecimalPlaces(10, Decimal.ROUND_HALF_UP).toFixed(10);
}
