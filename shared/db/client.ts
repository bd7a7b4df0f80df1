import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client';

export { PrismaClient };
export type Db = PrismaClient;

/** One Prisma client over a pg pool (Prisma 7 talks to PostgreSQL through a driver adapter). */
export function createDb(databaseUrl: string, opts: { max?: number } = {}): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: opts.max ?? 20 });
  return new PrismaClient({ adapter });
}
