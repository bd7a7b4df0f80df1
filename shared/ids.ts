import { randomInt } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Base62 digits of an id's creation time (milliseconds; 62^8 ms reach the year 8900). */
const TIME_DIGITS = 8;

export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/**
 * 24 base62 characters that start with their creation time (8, milliseconds, most significant first) then 16 random:
 * a record found by such an id is looked for in the month it was made (shared/db/generation-reads.ts).
 */
export function timedBase62(now: number = Date.now()): string {
  let t = '';
  for (let i = 0, v = Math.max(0, Math.floor(now)); i < TIME_DIGITS; i++, v = Math.floor(v / 62)) t = BASE62[v % 62] + t;
  // The random part inline (not randomBase62): an id costs the request path one function, as before.
  for (let i = TIME_DIGITS; i < 24; i++) t += BASE62[randomInt(62)];
  return t;
}

/**
 * The creation time an id carries (`<prefix>_<timed>...`, also a batch line's `<prefix>_<batch's timed>l<n>`), or
 * undefined. An id made before ids carried it decodes to a random time: readers treat the time as a hint only.
 */
export function idTime(id: string): Date | undefined {
  const s = id.slice(id.indexOf('_') + 1);
  if (s.length < 24) return undefined;
  let v = 0;
  for (let i = 0; i < TIME_DIGITS; i++) {
    const d = BASE62.indexOf(s[i]);
    if (d < 0) return undefined;
    v = v * 62 + d;
  }
  return new Date(v);
}

/** Prefixed identifiers (`org_`, `usr_`, `key_`, `gen_`, `file_`) that carry their creation time. */
export function newId(prefix: string): string {
  return `${prefix}_${timedBase62()}`;
}

/** The wall clock, as every service takes it by default (injected: tests pass their own). */
export const systemClock = (): Date => new Date();
