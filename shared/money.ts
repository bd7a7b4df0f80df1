import { Decimal as PrismaDecimal } from '@prisma/client-runtime-utils';

/**
 * Exact decimal money. The type is Prisma's own Decimal (decimal.js: precision 20, ROUND_HALF_UP), taken from its
 * runtime utilities rather than the generated client, so money code (and routing) loads no database client and
 * still reads Prisma's Decimal columns as the same class. Floats never hold money. (A constant, not `export { Decimal }`:
 * a re-export compiles to a getter that every read of `Decimal` would call.)
 */
export const Decimal = PrismaDecimal;
export type Decimal = PrismaDecimal;
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

/** Plain decimal text: digits, an optional fraction and exponent (what `String(number)` and price strings look like). */
const DECIMAL_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE]([+-]?\d+))?$/;
const MAX_EXPONENT = 1000;

/** A decimal from caller or catalog input, or undefined when it is not a finite decimal number. */
export function parseMoney(value: unknown): Decimal | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? new Decimal(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const m = DECIMAL_TEXT.exec(value.trim());
  if (!m || (m[1] !== undefined && Math.abs(Number(m[1])) > MAX_EXPONENT)) return undefined;
  return new Decimal(value.trim());
}

/** -1, 0 or 1 as a is below, equal to or above b, exactly (no float arithmetic). */
export function compareMoney(a: MoneyLike, b: MoneyLike): -1 | 0 | 1 {
  const d = (v: MoneyLike) => (typeof v === 'string' ? new Decimal(v.trim()) : money(v));
  return d(a).cmp(d(b)) as -1 | 0 | 1;
}
