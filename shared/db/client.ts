import { Pool } from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';

export { PrismaClient };
export type Db = PrismaClient;

const pools = new WeakMap<Db, Pool>();

/**
 * One Prisma client over a pg pool (Prisma 7 talks to PostgreSQL through a driver adapter). The pool is ours,
 * so the hot path can reach it too (see poolOf); `$disconnect()` ends it.
 */
export function createDb(databaseUrl: string, opts: { max?: number } = {}): Db {
  const pool = new Pool({ connectionString: databaseUrl, max: opts.max ?? 20 });
  pool.on('error', () => undefined); // an idle connection dropped by the server: the pool replaces it
  const db = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  pools.set(db, pool);
  return db;
}

/**
 * The pool under a client made by createDb. The generation hot path calls its SQL functions through it
 * directly: one round trip without the query engine's work, about half a millisecond less per call.
 */
export function poolOf(db: Db): Pool | undefined {
  return pools.get(db);
}
