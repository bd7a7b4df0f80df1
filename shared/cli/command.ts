import type { Config } from '../config/env';
import type { AccountsService } from '../services/accounts.service';

/** What every `switchyard` command is (the table in main.ts), and the checks of its flag values. */

export type Values = Record<string, string | boolean | undefined>;
export type Output = { json: Record<string, unknown>; text: string };

export interface Context {
  config: Config;
  env: NodeJS.ProcessEnv;
}

/** Runs a checked command (commands with `needsDb: false` get no AccountsService and must not use it). */
export type Action = (accounts: AccountsService) => Promise<Output>;

export interface Command {
  group: string;
  action: string;
  usage: string;
  summary: string;
  /** String flags this command takes (besides --json and --help). */
  flags: string[];
  required: string[];
  needsDb: boolean;
  /** Checks every flag value (throwing CliError) before anything touches the database. */
  prepare(v: Values, ctx: Context): Action;
}

/** Usage errors: bad flags or values. */
export class CliError extends Error {}

// ---- value checks (strings stay exact: money never becomes a float) ----

export function str(v: Values, flag: string): string | undefined {
  const value = v[flag];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new CliError(`--${flag} needs a value`);
  return value.trim();
}

export function rub(v: Values, flag: string, opts: { positive?: boolean } = {}): string | undefined {
  const value = str(v, flag);
  if (value === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(value)) throw new CliError(`--${flag} must be a non-negative decimal amount of rubles, e.g. 100 or 12.50 (got "${value}")`);
  if (/\.\d{11,}$/.test(value)) throw new CliError(`--${flag} has more than 10 decimal places (got "${value}")`);
  if (opts.positive && /^[0.]+$/.test(value)) throw new CliError(`--${flag} must be greater than 0 (got "${value}")`);
  return value;
}

export function integer(v: Values, flag: string, min: number): number | undefined {
  const value = str(v, flag);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) throw new CliError(`--${flag} must be an integer of at least ${min} (got "${value}")`);
  return n;
}

export function oneOf<T extends string>(v: Values, flag: string, allowed: readonly T[]): T | undefined {
  const value = str(v, flag);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new CliError(`--${flag} must be one of ${allowed.join(', ')} (got "${value}")`);
  return value as T;
}
