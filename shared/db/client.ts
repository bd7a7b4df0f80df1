import { createHash } from 'node:crypto';
import { Pool, type ClientBase } from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient, type Prisma } from './generated/client';

export { PrismaClient };
export type Db = PrismaClient;

/**
 * A query whose text starts with this comment is prepared once per connection under a name (a hash of its text), so
 * PostgreSQL keeps its plan (after five runs, a generic plan when that costs no more) instead of planning it at every
 * call. History's listings start with it: a member's page over three branches and the monthly partitions spends about
 * 1 ms planning and 0.3 ms running. Not where the URL says `pgbouncer=true` (Prisma's convention: a pooler in
 * transaction mode that cannot keep named statements, as PgBouncer before 1.21): there every query is planned anew.
 */
export const CACHED_PLAN = '/* cached plan */';

/** The name a CACHED_PLAN query is prepared under; '' for any other query (node-postgres then sends it unnamed). */
function statementName(query: { sql: string }): string {
  return query.sql.startsWith(CACHED_PLAN) ? `sy_${createHash('sha1').update(query.sql).digest('hex').slice(0, 24)}` : '';
}

/** Whether the URL names a pooler that cannot keep named statements (`?pgbouncer=true`). */
function behindPooler(databaseUrl: string): boolean {
  try {
    return new URL(databaseUrl).searchParams.get('pgbouncer') === 'true';
  } catch {
    return false;
  }
}

/**
 * One Prisma client over a pg pool (Prisma 7 talks to PostgreSQL through a driver adapter); `$disconnect()` ends
 * both. The pool is handed out too: the ledger's hot path (shared/billing/ledger.ts) calls its SQL functions
 * through it directly, one round trip without the query engine's work (about half a millisecond less per call).
 */
export function connectDb(
  databaseUrl: string,
  /** `timeoutMs`: a connection and a query give up after this long (a replica's reads, which then go to the primary). */
  opts: { max?: number; timeoutMs?: number } = {},
): { db: Db; pool: Pool } {
  const pool = newPool(databaseUrl, opts);
  const adapter = new PrismaPg(pool, { disposeExternalPool: true, ...(!behindPooler(databaseUrl) && { statementNameGenerator: statementName }) });
  return { db: new PrismaClient({ adapter }), pool };
}

function newPool(databaseUrl: string, opts: { max?: number; timeoutMs?: number; onConnect?: (c: ClientBase) => Promise<void>; keepIdle?: boolean }): Pool {
  const pool = new Pool({
    connectionString: databaseUrl,
    max: opts.max ?? 20,
    // pg closes a connection idle 10 s unless told to keep it (0); kept, an idle one does not hold the process open.
    ...(opts.keepIdle && { idleTimeoutMillis: 0, allowExitOnIdle: true }),
    ...(opts.timeoutMs !== undefined && { connectionTimeoutMillis: opts.timeoutMs, query_timeout: opts.timeoutMs }),
    // Awaited before the new connection serves its first query.
    ...(opts.onConnect && { onConnect: opts.onConnect }),
  });
  pool.on('error', () => undefined); // an idle connection dropped by the server: the pool replaces it
  return pool;
}

/**
 * The pool history's listings read through (HistoryService `pool`). Its sessions plan a CACHED_PLAN statement once,
 * generically (`plan_cache_mode = force_generic_plan`, set as each connection opens), where PostgreSQL would first plan
 * it anew at each of its first five runs on each connection: a member's listing over 20 M generations spends 3-10 ms
 * in such a plan, more than its run. A pool of its own, so no other query loses the plan its own values give it (the
 * estimate's EXPLAIN keeps them: a utility statement is planned with its values). Its connections stay open when idle:
 * a new one spends 10-25 ms loading the months' catalog entries at its first listing, which a listing every 10 s
 * or more (a person clicking through the console) would pay each time. Behind a pooler (`pgbouncer=true`) nothing is
 * named and nothing set.
 */
export function connectListings(databaseUrl: string, opts: { max?: number; timeoutMs?: number } = {}): Pool {
  if (behindPooler(databaseUrl)) return newPool(databaseUrl, { ...opts, keepIdle: true });
  // Should the setting fail, the listing is only planned as PostgreSQL would by itself.
  const generic = async (c: ClientBase) => void (await c.query('SET plan_cache_mode = force_generic_plan').catch(() => undefined));
  return newPool(databaseUrl, { ...opts, keepIdle: true, onConnect: generic });
}

/**
 * A database as raw reads use it: the Prisma client, and a pg pool on the same database to read through when the
 * caller has one (history's: connectListings). Rows read through a pool skip the query engine's work (about 0.2 ms of
 * CPU a query: history's listing makes three).
 */
export interface SqlReads {
  db: Db;
  pool?: Pool;
}

/** The rows of a raw query, through the pool when there is one (a CACHED_PLAN query named as connectDb names it). */
export async function rawRows<T>(from: SqlReads, query: Prisma.Sql): Promise<T[]> {
  if (!from.pool) return from.db.$queryRaw<T[]>(query);
  const url = from.pool.options.connectionString;
  const name = url && behindPooler(url) ? '' : statementName({ sql: query.text });
  return (await from.pool.query({ text: query.text, values: query.values, ...(name && { name }) })).rows as T[];
}

/** Resolves when the database answers a query (readiness checks). */
export const databaseAnswers = (db: Db): Promise<unknown> => db.$queryRaw`SELECT 1`;

/** connectDb's client alone (tools and checks that move no money on the hot path). */
export function createDb(databaseUrl: string, opts: { max?: number } = {}): Db {
  return connectDb(databaseUrl, opts).db;
}
