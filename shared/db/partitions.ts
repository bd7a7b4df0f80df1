import type { Db } from './client';

/** The tables kept in monthly partitions (prisma/migrations/20261204000000_history_partitions). */
export const PARTITIONED_TABLES = ['generations', 'ledger_entries'] as const;
/** Months made ahead of the one running: a job that stops for weeks still leaves inserts a month to go to. */
export const MONTHS_AHEAD = 3;
/** Customer content is kept in days (prisma/migrations/20261204100000_generation_contents): days made ahead. */
export const CONTENT_DAYS_AHEAD = 7;
/**
 * How long making or detaching a partition may wait for a lock (then the run fails and is tried again). Both lock
 * organizations first (the migration partition_lock_order), so money waits behind them meanwhile: kept short, and
 * shorter than PostgreSQL's deadlock check (deadlock_timeout, 1 s), so in any lock cycle the DDL is what gives way.
 */
const DDL_LOCK_TIMEOUT = '500ms';
const DAY_MS = 86_400_000;

export interface PartitionsKept {
  /** Partitions created (`<table>_pYYYYMM`, `generation_contents_dYYYYMMDD`). */
  created: string[];
  /** Generations' months past HISTORY_RETENTION_DAYS and content's days past CONTENT_RETENTION_DAYS, dropped. */
  retired: string[];
}

/**
 * The partitions of history, the ledger and customer content (docs/architecture.md "Partitions"): the maintenance job
 * makes the coming months (days for content) before their rows arrive, and drops generations' months past
 * HISTORY_RETENTION_DAYS and content's days past CONTENT_RETENTION_DAYS whole (no row deletes, no vacuum debt).
 * Ledger entries are never dropped.
 */
export class HistoryPartitions {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date,
    /** HISTORY_RETENTION_DAYS, CONTENT_RETENTION_DAYS (shared/config/env.ts HistorySettings); 0 keeps them. */
    private readonly settings: { retentionDays: number; contentRetentionDays: number },
  ) {}

  async keep(): Promise<PartitionsKept> {
    const now = this.clock();
    const created: string[] = [];
    const ensure = async (table: string, at: Date, unit: 'month' | 'day') => {
      const [, [r]] = await this.db.$transaction([
        this.db.$executeRawUnsafe(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`),
        this.db.$queryRaw<Array<{ made: boolean }>>`SELECT sy_partition_ensure(${table}, ${at}::timestamptz, ${unit}) AS made`,
      ]);
      if (r.made) created.push(`${table}_${unit === 'month' ? `p${at.toISOString().slice(0, 7).replace('-', '')}` : `d${at.toISOString().slice(0, 10).replace(/-/g, '')}`}`);
    };
    for (const table of PARTITIONED_TABLES) {
      for (let i = 0; i <= MONTHS_AHEAD; i++) await ensure(table, new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + i, 1)), 'month');
    }
    for (let i = 0; i <= CONTENT_DAYS_AHEAD; i++) await ensure('generation_contents', new Date(now.getTime() + i * DAY_MS), 'day');
    return { created, retired: await this.retire(now) };
  }

  /**
   * Drops generations' months and content's days whose last instant is past their retention before `now`: detached
   * in one short transaction (the table's lock for milliseconds), then dropped one by one (the files' unlinking, a
   * second or more for a month of millions of rows, holds no lock the service waits on). A partition detached by a run
   * that died before dropping it is dropped by the next.
   */
  async retire(now: Date = this.clock()): Promise<string[]> {
    const retired: string[] = [];
    const drop = async (table: string, days: number) => {
      if (days <= 0) return;
      const before = new Date(now.getTime() - days * DAY_MS);
      const [, rows] = await this.db.$transaction([
        this.db.$executeRawUnsafe(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`),
        this.db.$queryRaw<Array<{ name: string }>>`SELECT sy_partition_detach(${table}, ${before}::timestamptz) AS name`,
      ]);
      // Detached ones left by a run that died in between: tables of a partition's name that are no partition.
      const left = await this.db.$queryRaw<Array<{ name: string }>>`
        SELECT relname AS name FROM pg_class WHERE relkind = 'r' AND NOT relispartition AND relnamespace = 'public'::regnamespace
           AND (relname ~ ('^' || ${table} || '_p[0-9]{6}$') OR relname ~ ('^' || ${table} || '_d[0-9]{8}$'))`;
      for (const name of new Set([...rows, ...left].map((r) => r.name))) {
        await this.db.$executeRawUnsafe(`DROP TABLE IF EXISTS public."${name.replace(/"/g, '')}"`);
        retired.push(name);
      }
      // Content a clock far off put in the default partition goes by the same rule (a few rows, if any).
      if (table === 'generation_contents') await this.db.$executeRaw`DELETE FROM generation_contents_default WHERE created_at < ${before}::timestamptz`;
    };
    await drop('generations', this.settings.retentionDays);
    await drop('generation_contents', this.settings.contentRetentionDays);
    return retired;
  }
}

/**
 * The span of generations' monthly partitions, [from, before) (their names are their UTC months), while the default
 * partition is empty (a clock far off puts rows there until the hourly keep-partitions moves them into a month of
 * their own). A listing bounded to it reads no default partition, so PostgreSQL scans the months in their order and
 * stops once a page is full; with the default partition in its plan it must merge a scan of every month. Undefined
 * when there is no month, when the months have a gap (the span would hold more than the months), or when the default
 * holds rows.
 */
export async function generationMonths(db: Db): Promise<{ from: Date; before: Date } | undefined> {
  const [r] = await db.$queryRaw<Array<{ names: string[]; defaulted: boolean }>>`
    SELECT array(SELECT inhrelid::regclass::text FROM pg_inherits WHERE inhparent = 'public.generations'::regclass) AS names,
           EXISTS (SELECT 1 FROM public.generations_default) AS defaulted`;
  if (r.defaulted) return undefined;
  const months = r.names
    .map((n) => /(?:^|\.)generations_p(\d{4})(\d{2})$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]) * 12 + Number(m[2]) - 1)
    .sort((a, b) => a - b);
  if (months.length === 0 || months[months.length - 1] - months[0] !== months.length - 1) return undefined;
  const start = (m: number) => new Date(Date.UTC(Math.floor(m / 12), m % 12, 1));
  return { from: start(months[0]), before: start(months[months.length - 1] + 1) };
}
