/** Where the tests find the machine's services (overridable for other machines). */
export const TEST_PG_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Where the service under test reaches PostgreSQL; the scale suite points it at PgBouncer
 * (TEST_APP_DATABASE_URL) while creating databases and migrating stay on the direct TEST_PG_URL.
 */
export const TEST_APP_PG_URL = process.env.TEST_APP_DATABASE_URL ?? TEST_PG_URL;

export function databaseUrl(name: string, base = TEST_PG_URL): string {
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Template database holding the migrated schema; each test file clones it (fast) into its own database. */
export const TEMPLATE_DB = `sy_template_${process.env.SY_TEMPLATE_SUFFIX ?? 'v1'}`;
