/**
 * Exact decimal arithmetic for price comparison: a value is an integer (BigInt) scaled by 10^-scale.
 * Numbers go through their shortest round-trip text (`String(0.1)` is "0.1"), so no float arithmetic is involved.
 */

export interface ScaledDecimal {
  units: bigint;
  scale: number;
}

const DECIMAL_RE = /^([+-])?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
const MAX_EXPONENT = 1000;

/** Parse a decimal string or finite number; `undefined` when it is not one. */
export function parseDecimal(value: string | number): ScaledDecimal | undefined {
  if (typeof value === 'number' && !Number.isFinite(value)) return undefined;
  const text = typeof value === 'number' ? String(value) : value.trim();
  const m = DECIMAL_RE.exec(text);
  if (!m) return undefined;
  const [, sign, intPart = '', fracPart = '', expPart] = m;
  if (intPart === '' && fracPart === '') return undefined;
  const exponent = expPart === undefined ? 0 : Number(expPart);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT) return undefined;
  let units = BigInt((intPart + fracPart).replace(/^0+(?=\d)/, '') || '0');
  if (sign === '-') units = -units;
  let scale = fracPart.length - exponent;
  if (scale < 0) {
    units *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { units, scale };
}

function must(value: string | number): ScaledDecimal {
  const d = parseDecimal(value);
  if (!d) throw new TypeError(`Not a decimal number: ${String(value)}`);
  return d;
}

function align(a: ScaledDecimal, b: ScaledDecimal): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [a.units * 10n ** BigInt(scale - a.scale), b.units * 10n ** BigInt(scale - b.scale), scale];
}

/** -1, 0 or 1 as a is below, equal to or above b. Throws a TypeError on a value that is not a decimal. */
export function compareDecimal(a: string | number, b: string | number): -1 | 0 | 1 {
  const [x, y] = align(must(a), must(b));
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Exact sum as a canonical decimal string ("0.1" + "0.2" = "0.3"). */
export function addDecimal(...values: Array<string | number>): string {
  let acc: ScaledDecimal = { units: 0n, scale: 0 };
  for (const v of values) {
    const [x, y, scale] = align(acc, must(v));
    acc = { units: x + y, scale };
  }
  return formatDecimal(acc);
}

export function formatDecimal(d: ScaledDecimal): string {
  const negative = d.units < 0n;
  let digits = (negative ? -d.units : d.units).toString();
  if (d.scale > 0) {
    digits = digits.padStart(d.scale + 1, '0');
    const intPart = digits.slice(0, digits.length - d.scale);
    const fracPart = digits.slice(digits.length - d.scale).replace(/0+$/, '');
    digits = fracPart ? `${intPart}.${fracPart}` : intPart;
  }
  return negative && digits !== '0' ? `-${digits}` : digits;
}
