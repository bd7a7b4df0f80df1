import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../config/env';
import { AppError } from '../errors/app-error';
import { AccountsService } from '../services/accounts.service';
import { announceKeyChangeFrom, type KeyChange } from '../runtime/key-changes';
import type { RuntimeLogger } from '../runtime/process-utils';
import { readRuntimeInfo } from '../runtime/runtime-file';
import { resolveSecret } from '../runtime/secret';
import { describeError, openDatabase, safeUrl } from './database';
import { CliError, type Command, type Values } from './command';
import { ACCOUNT_COMMANDS } from './account-commands';
import { CatalogCheckError, OPERATOR_COMMANDS } from './operator-commands';

/**
 * The `switchyard` operator CLI (decisions.md section 1). Command names, flags and the keys printed with
 * `--json` are a contract. `runCli` is pure wiring so tests run it in-process; bin/switchyard.js calls it.
 */
export interface CliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
  env: NodeJS.ProcessEnv;
}

const COMMANDS: Command[] = [...ACCOUNT_COMMANDS, ...OPERATOR_COMMANDS];

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

/**
 * How a key changed here (revoked) reaches a running deployment at once (shared/runtime/key-changes.ts): over
 * REDIS_URL, else the Redis of the service running on this machine (its runtime.json); with neither, there is no
 * service to tell. Unreachable, it is said on stderr: the processes then see the change within a second.
 */
function keyChangeTeller(config: Config, logger: RuntimeLogger): (change: KeyChange) => Promise<void> {
  return async (change) => {
    const url = config.redisUrl ?? readRuntimeInfo(config.homeDir)?.redisUrl;
    if (!url) return;
    if (!(await announceKeyChangeFrom(url, config.queuePrefix, change))) {
      logger.warn(`the running service was not told of the change (Redis at ${safeUrl(url)} did not answer): its processes see it within a second`);
    }
  };
}

function errorMessage(e: unknown): string {
  if (e instanceof CliError || e instanceof AppError) return e.message;
  const code = (e as { code?: unknown }).code;
  if (code === 'P2002') return 'that record already exists (for a user: this e-mail is already in use)';
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
      accounts = new AccountsService(database.db, secret, undefined, keyChangeTeller(config, logger));
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
