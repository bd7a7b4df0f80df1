import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../config/env';
import { CatalogError, loadCatalog } from '../catalog/load-catalog';
import { moneyString } from '../money';
import type { LimitReset } from '../billing/periods';
import type { Role } from '../auth/tokens';
import { AppError } from '../errors/app-error';
import { AccountsService } from '../services/accounts.service';
import type { RuntimeLogger } from '../runtime/process-utils';
import { resolveSecret } from '../runtime/secret';
import { DEFAULT_OPERATOR_TOKEN_TTL_SECONDS, signOperatorToken } from '../auth/operator-tokens';
import { describeError, openDatabase } from './database';

/**
 * The `switchyard` operator CLI (decisions.md section 1). Command names, flags and the keys printed with
 * `--json` are a contract. `runCli` is pure wiring so tests run it in-process; bin/switchyard.js calls it.
 */
export interface CliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
  env: NodeJS.ProcessEnv;
}

type Values = Record<string, string | boolean | undefined>;
type Output = { json: Record<string, unknown>; text: string };

interface Context {
  config: Config;
  env: NodeJS.ProcessEnv;
}

/** Runs a checked command (commands with `needsDb: false` get no AccountsService and must not use it). */
type Action = (accounts: AccountsService) => Promise<Output>;

interface Command {
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
class CliError extends Error {}

const ROLES: Role[] = ['owner', 'admin', 'member'];
const RESETS: LimitReset[] = ['daily', 'weekly', 'monthly', 'never'];
const LIMIT_USAGE = `[--limit RUB --reset ${RESETS.join('|')}]`;

// ---- value checks (strings stay exact: money never becomes a float) ----

function str(v: Values, flag: string): string | undefined {
  const value = v[flag];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new CliError(`--${flag} needs a value`);
  return value.trim();
}

function rub(v: Values, flag: string, opts: { positive?: boolean } = {}): string | undefined {
  const value = str(v, flag);
  if (value === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(value)) throw new CliError(`--${flag} must be a non-negative decimal amount of rubles, e.g. 100 or 12.50 (got "${value}")`);
  if (/\.\d{11,}$/.test(value)) throw new CliError(`--${flag} has more than 10 decimal places (got "${value}")`);
  if (opts.positive && /^[0.]+$/.test(value)) throw new CliError(`--${flag} must be greater than 0 (got "${value}")`);
  return value;
}

function integer(v: Values, flag: string, min: number): number | undefined {
  const value = str(v, flag);
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) throw new CliError(`--${flag} must be an integer of at least ${min} (got "${value}")`);
  return n;
}

function oneOf<T extends string>(v: Values, flag: string, allowed: readonly T[]): T | undefined {
  const value = str(v, flag);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new CliError(`--${flag} must be one of ${allowed.join(', ')} (got "${value}")`);
  return value as T;
}

function limitFlags(v: Values): { limit?: string; reset?: LimitReset } {
  const limit = rub(v, 'limit');
  const reset = oneOf(v, 'reset', RESETS);
  if (reset && limit === undefined) throw new CliError('--reset needs --limit');
  return { limit, reset };
}

// ---- commands ----

const COMMANDS: Command[] = [
  {
    group: 'org',
    action: 'create',
    usage: 'org create --name NAME [--balance RUB]',
    summary: 'create an organization with its owner; prints the owner token and the callback and webhook secrets',
    flags: ['name', 'balance'],
    required: ['name'],
    needsDb: true,
    prepare(v) {
      const input = { name: str(v, 'name')!, balance: rub(v, 'balance') };
      return async (accounts) => {
        const r = await accounts.createOrganization(input);
        return {
          json: { organizationId: r.organizationId, ownerUserId: r.ownerUserId, ownerToken: r.ownerToken, callbackSecret: r.callbackSecret, webhookSecret: r.webhookSecret },
          text: `organization ${r.organizationId} created; owner ${r.ownerUserId}; owner token: ${r.ownerToken}; callback secret: ${r.callbackSecret}; webhook secret: ${r.webhookSecret}`,
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
      const email = str(v, 'email')!;
      if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new CliError(`--email must be an e-mail address (got "${email}")`);
      const role = oneOf(v, 'role', ROLES)!;
      const input = { organizationId: str(v, 'org')!, email, role, ...limitFlags(v) };
      return async (accounts) => {
        const r = await accounts.createUser(input);
        return { json: { userId: r.userId, token: r.token }, text: `user ${r.userId} (${email}, ${role}) created; token: ${r.token}` };
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
  {
    group: 'operator',
    action: 'token issue',
    usage: 'operator token issue [--ttl SECONDS]',
    summary: `issue an operator token: it opens the queue dashboard and nothing in the customer API (default lifetime ${DEFAULT_OPERATOR_TOKEN_TTL_SECONDS / 3600} hours)`,
    flags: ['ttl'],
    required: [],
    needsDb: false,
    prepare(v, ctx) {
      const ttl = integer(v, 'ttl', 1);
      return async () => {
        const token = signOperatorToken(resolveSecret(ctx.config), ttl);
        return { json: { token }, text: `operator token: ${token}` };
      };
    },
  },
  {
    group: 'catalog',
    action: 'check',
    usage: 'catalog check [--file F]',
    summary: 'validate the catalog file (default: $SWITCHYARD_CATALOG or config/catalog.json)',
    flags: ['file'],
    required: [],
    needsDb: false,
    prepare(v, ctx) {
      const given = str(v, 'file');
      const file = given ? path.resolve(given) : ctx.config.catalogPath;
      return async () => {
        let catalog;
        try {
          catalog = loadCatalog(file, ctx.env);
        } catch (e) {
          if (e instanceof CatalogError) throw new CatalogCheckError(file, e.problems);
          throw e;
        }
        const models = Object.keys(catalog.models).length;
        const providers = Object.keys(catalog.providers).length;
        return {
          json: { ok: true, models, providers },
          text: `catalog ${path.relative(process.cwd(), file) || file} is valid: ${models} model(s), ${providers} provider(s)`,
        };
      };
    },
  },
];

class CatalogCheckError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`catalog ${file} refused`);
  }
}

const GROUPS = [...new Set(COMMANDS.map((c) => c.group))];

function helpText(commands: Command[] = COMMANDS): string {
  const width = Math.max(...commands.map((c) => `${c.group} ${c.action}`.length));
  const lines = [
    'Usage: switchyard <command> [flags] [--json]',
    '',
    'Commands:',
    ...commands.flatMap((c) => [`  ${`${c.group} ${c.action}`.padEnd(width)}  ${c.summary}`, `  ${' '.repeat(width)}  switchyard ${c.usage}`]),
    '',
    'Flags:',
    '  --json   print one JSON object on stdout instead of a readable line',
    '  --help   show this help',
    '',
    'Money is in rubles, as decimals (e.g. 100 or 12.50). Exit code 0 on success, 1 on error (message on stderr).',
    'Environment: DATABASE_URL (default: the embedded PostgreSQL in ./.switchyard/pg, reusing the running service\'s),',
    '  SWITCHYARD_SECRET (default: ./.switchyard/secret), SWITCHYARD_CATALOG, SWITCHYARD_HOME (default ./.switchyard).',
  ];
  return `${lines.join('\n')}\n`;
}

const ALL_FLAGS = [...new Set(COMMANDS.flatMap((c) => c.flags))];
const GLOBAL_OPTIONS = { json: { type: 'boolean' as const }, help: { type: 'boolean' as const, short: 'h' } };

function stringOptions(flags: string[]) {
  return Object.fromEntries(flags.map((f) => [f, { type: 'string' as const }]));
}

/** parseArgs errors in our words. */
function parseError(e: unknown, cmd: Command): CliError {
  const message = (e as Error).message;
  const unknown = /Unknown option '([^']+)'/.exec(message);
  if (unknown) return new CliError(`unknown flag ${unknown[1]} for "${cmd.group} ${cmd.action}" (usage: switchyard ${cmd.usage})`);
  const missing = /Option '(-\w, )?(--[\w-]+)[^']*' argument missing/.exec(message);
  if (missing) return new CliError(`${missing[2]} needs a value`);
  const ambiguous = /Option '(-\w, )?(--[\w-]+)[^']*' argument is ambiguous/.exec(message);
  if (ambiguous) return new CliError(`${ambiguous[2]} needs a value (to pass a value starting with "-", write ${ambiguous[2]}=VALUE)`);
  const notString = /Option '(-\w, )?(--[\w-]+)[^']*' does not take an argument/.exec(message);
  if (notString) return new CliError(`${notString[2]} takes no value`);
  return new CliError(message.split('\n')[0]);
}

function cliLogger(io: CliIo, logLevel: string): RuntimeLogger {
  const verbose = logLevel === 'debug';
  const write = (level: string) => (message: string) => {
    io.stderr.write(`switchyard ${level}: ${message}\n`);
  };
  return { debug: verbose ? write('debug') : () => {}, info: verbose ? write('info') : () => {}, warn: write('warn'), error: write('error') };
}

function errorMessage(e: unknown): string {
  if (e instanceof CliError || e instanceof AppError) return e.message;
  const code = (e as { code?: unknown }).code;
  if (code === 'P2002') return 'that record already exists (for a user: this e-mail is already in the organization)';
  if (code === 'P2003') return 'a referenced record does not exist';
  return describeError(e).split('\n').filter(Boolean).slice(-1)[0] ?? 'unknown error';
}

/**
 * Runs one CLI command. `argv` is the arguments after the program name (process.argv.slice(2)).
 * Resolves to the exit code: 0 on success, 1 on any error (reported on stderr).
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const fail = (message: string) => {
    io.stderr.write(`error: ${message}\n`);
    return 1;
  };

  // First pass (lenient) only to find the command words and --help.
  let loose;
  try {
    loose = parseArgs({ args: argv, options: { ...GLOBAL_OPTIONS, ...stringOptions(ALL_FLAGS) }, strict: false, allowPositionals: true });
  } catch (e) {
    return fail((e as Error).message);
  }
  const [group, action] = loose.positionals;
  const words = (c: Command) => c.action.split(' ').length;
  const help = loose.values.help === true;
  if (!group) {
    if (help) {
      io.stdout.write(helpText());
      return 0;
    }
    io.stderr.write(helpText());
    return fail('no command given');
  }
  if (!GROUPS.includes(group)) return fail(`unknown command "${group}" (commands: ${GROUPS.join(', ')}; see switchyard --help)`);
  const inGroup = COMMANDS.filter((c) => c.group === group);
  // An action may be two words (`operator token issue`).
  const cmd = inGroup.find((c) => loose.positionals.slice(1, 1 + words(c)).join(' ') === c.action);
  if (!cmd) {
    if (help && !action) {
      io.stdout.write(helpText(inGroup));
      return 0;
    }
    const known = inGroup.map((c) => `${c.group} ${c.action}`).join(', ');
    return fail(action ? `unknown command "${group} ${action}" (known: ${known})` : `"${group}" needs a subcommand: ${known}`);
  }
  if (help) {
    io.stdout.write(helpText([cmd]));
    return 0;
  }

  let values: Values;
  try {
    const parsed = parseArgs({ args: argv, options: { ...GLOBAL_OPTIONS, ...stringOptions(cmd.flags) }, strict: true, allowPositionals: true });
    const extra = parsed.positionals.slice(1 + words(cmd));
    if (extra.length) return fail(`unexpected argument "${extra[0]}" for "${cmd.group} ${cmd.action}" (usage: switchyard ${cmd.usage})`);
    values = parsed.values as Values;
  } catch (e) {
    return fail(parseError(e, cmd).message);
  }
  const missing = cmd.required.filter((f) => values[f] === undefined);
  if (missing.length) return fail(`missing ${missing.map((f) => `--${f}`).join(', ')} (usage: switchyard ${cmd.usage})`);

  let config: Config;
  try {
    config = loadConfig(io.env, []);
  } catch (e) {
    return fail(errorMessage(e));
  }
  const logger = cliLogger(io, config.logLevel);

  let close: (() => Promise<void>) | undefined;
  try {
    // Every flag value is checked before the database is touched: a typo must not cost a PostgreSQL start.
    const action = cmd.prepare(values, { config, env: io.env });
    let accounts = null as unknown as AccountsService;
    if (cmd.needsDb) {
      const secret = resolveSecret(config);
      const database = await openDatabase(config, logger);
      close = database.close;
      accounts = new AccountsService(database.db, secret);
    }
    const out = await action(accounts);
    io.stdout.write(values.json ? `${JSON.stringify(out.json)}\n` : `${out.text}\n`);
    return 0;
  } catch (e) {
    if (e instanceof CatalogCheckError) {
      io.stderr.write(`error: ${e.message} with ${e.problems.length} problem(s):\n`);
      for (const p of e.problems) io.stderr.write(`- ${p}\n`);
      return 1;
    }
    return fail(errorMessage(e));
  } finally {
    if (close) await close().catch((e) => logger.warn(`closing the database: ${describeError(e)}`));
  }
}
