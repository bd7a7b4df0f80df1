import type { Pool } from 'pg';

/**
 * Has every backend of `pool` report its statistics (pg_stat_database, pg_stat_user_tables), which it otherwise does
 * on its own schedule (at most once a second, or after ten idle seconds): each is asked to report when next idle,
 * then asked something more, which it answers only after reporting. Every connection of the pool must be idle.
 */
export async function reportStats(pool: Pool): Promise<void> {
  const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
  try {
    for (const c of clients) {
      await c.query('SELECT pg_stat_force_next_flush()');
      await c.query('SELECT 1');
    }
  } finally {
    for (const c of clients) c.release();
  }
}
