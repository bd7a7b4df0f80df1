import type { Pool } from 'pg';
import type { Db } from '../db/client';
import { GroupCommit } from '../db/group-commit';
import { AppError } from '../errors/app-error';
import { countSettled, type Metrics } from '../metrics/metrics';
import { money, toStorage, type Decimal, type MoneyLike } from '../money';
import type { StoredError } from '../errors/app-error';
import type { GenerationStatus } from '../db/generated/enums';

export type ReserveRefusal = 'balance_insufficient' | 'key_limit_exceeded' | 'member_limit_exceeded';

/** The one wording of each refusal (402 and 403 replies), whichever money call refused. */
const REFUSAL_MESSAGES: Record<ReserveRefusal, string> = {
  balance_insufficient: 'Insufficient funds: the organization balance does not cover this request',
  key_limit_exceeded: 'The spending limit of this API key is reached for the current period',
  member_limit_exceeded: 'Your personal spending limit is reached for the current period',
};

/**
 * Throws the error a reservation's refusal reason stands for (an unknown organization is 404). `already_settled`: the
 * id's reservation was released or charged before (a generation discarded when its job could not be enqueued, opened
 * again): it never opens again, and the caller repeats on a new id (a batch line's next try), as after any 503.
 */
function refuse(reason: string): never {
  if (reason === 'not_found') throw new AppError('NOT_FOUND', 'Organization not found');
  if (reason === 'already_settled') throw new AppError('SERVICE_UNAVAILABLE', 'The generation was refused before it could run (nothing was charged): repeat the request');
  throw AppError.fromReason(reason as ReserveRefusal, REFUSAL_MESSAGES[reason as ReserveRefusal]);
}

/**
 * A generation record to reserve for and insert, in the columns of `sy_ledger_group`'s opens (the
 * batched_generations, idempotency_keys and set_based_ledger_batches migrations): `bound` and `minimum` are the
 * money, the rest is the record.
 */
export interface OpenRow {
  id: string;
  organization_id: string;
  bound: string;
  minimum: string;
  [column: string]: unknown;
}

/**
 * A generation's reservation was granted (`createdAt`: its record's created_at, the group's time), or its
 * Idempotency-Key already names a generation (`replayOf`), or another request holds the key.
 */
export type Opened = { granted: Decimal; createdAt: Date } | { replayOf: string } | { conflictWith: string };

/** A generation's ending in the columns of `sy_ledger_group`'s closes; `cost` absent releases the reservation. */
export interface CloseRow {
  id: string;
  status: 'completed' | 'failed' | 'cancelled';
  cost?: string;
  /** The model that served it: the label of the charge counter. */
  model?: string | null;
  [column: string]: unknown;
}

/** An open granted in memory from a lease (shared/billing/leases.ts): its bound moves from the lease to its own reservation. */
export interface DrawnRow extends OpenRow {
  lease: string;
}

/** A drawn open may carry its generation's close (folded in while it waited for its group): its record is inserted ended. */
type LedgerItem = { kind: 'open'; row: OpenRow } | { kind: 'close'; row: CloseRow } | { kind: 'drawn'; row: DrawnRow; close?: CloseRow };

/** A close submitted while its generation's drawn record still waits for a group goes with it, as one item. */
const foldClose = (waiting: LedgerItem, next: LedgerItem): LedgerItem | null =>
  waiting.kind === 'drawn' && !waiting.close && next.kind === 'close' ? { ...waiting, close: next.row } : null;

/** What a lease's process is told when it asks for one: granted, or why not (`thin`: too close to a limit to lease). */
export type LeaseTaken = { granted: Decimal } | { refused: string };

/**
 * A row of `sy_ledger_group`: an open's or a drawn open's columns (granted, reason, existing_id) or a close's (outcome,
 * charged, applied); a drawn open that carried its close has both.
 */
interface GroupRow {
  kind: 'open' | 'close' | 'drawn';
  id: string;
  granted: string | null;
  reason: string | null;
  existing_id: string | null;
  outcome: string | null;
  charged: string | null;
  applied: boolean | null;
  /** The group's time (`p_now`, not a column): the created_at of the generations its opens insert. */
  now: Date;
}

export interface LedgerOptions {
  /**
   * The pg pool under the Prisma client (shared/db/client.ts connectDb). The hot path's money calls go through it
   * directly: one round trip without the query engine's work. Without it they go through Prisma's raw queries.
   */
  pool?: Pool;
  /** Money counters (`switchyard_money_*`): reservations made, charges actually applied. */
  metrics?: Pick<Metrics, 'moneyReserved' | 'moneyCharged' | 'tokens'>;
}

/**
 * The states of a generation that has not ended yet: queued or running. The one rule of "still running": the set for
 * checks, the list for queries (Prisma's `in`/`notIn`, SQL's `= ANY`).
 */
export const RUNNING_STATUSES: readonly GenerationStatus[] = ['pending', 'processing'];
export const RUNNING: ReadonlySet<string> = new Set(RUNNING_STATUSES);

/**
 * How long a money write nobody waits on (`{ background: true }`) waits for others before they commit as one group:
 * the close of a generation replied to (its settlement promised in the journal meanwhile: reads wait for it), and the
 * record of a synchronous request drawn from a lease (its reply rides on that promise). At concurrency 1 this takes two
 * commits of their own off each request's neighbours (bench/rounds/31: 2 ms of added latency in two steps).
 */
export const GATHER_MS = 20;

/** How often a money call chosen as a deadlock's victim is run again before its error goes to the caller. */
const DEADLOCK_RETRIES = 3;
/** PostgreSQL's deadlock_detected, through pg (`code`) or Prisma's raw queries (`meta.code`). */
const isDeadlock = (e: unknown): boolean => {
  const err = e as { code?: unknown; meta?: { code?: unknown } } | null;
  return err?.code === '40P01' || err?.meta?.code === '40P01';
};

/**
 * The money core: a generation's open (reserve and record) and close (charge or release, and its ending), leases,
 * discards and top-ups. Each call is one atomic SQL function (prisma/migrations), idempotent per generation id, safe
 * under any concurrency. Money moves only through this module.
 *
 * The hot path (`open`, `close`) reserves with the generation's insert and settles with its ending, group-committed
 * (shared/db/group-commit.ts): opens and closes share one group, so one request's open and another's close take each
 * organization row's lock once, in one transaction with one WAL flush.
 */
export class Ledger {
  private readonly pool?: Pool;
  private readonly metrics?: LedgerOptions['metrics'];

  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
    opts: LedgerOptions = {},
  ) {
    this.pool = opts.pool;
    this.metrics = opts.metrics;
    // Built apart from the call: inside it, V8 names the two arrows after the literal's keys (the walk counts named functions).
    const grouping = { gatherMs: GATHER_MS, fold: foldClose };
    this.group = new GroupCommit<LedgerItem, GroupRow>((items) => this.runGroup(items), (i) => i.row.id, grouping);
  }

  /** One group commit for both kinds; keyed by generation id, so a generation's open and close never share a group. */
  private readonly group: GroupCommit<LedgerItem, GroupRow>;
  /** Drawn records waiting for their close (`openDrawn`'s `closeWaitMs`), by generation id. */
  private readonly awaitingClose = new Map<string, { row: DrawnRow; resolve: (r: GroupRow) => void; reject: (e: unknown) => void; timer: NodeJS.Timeout }>();

  private async runGroup(items: LedgerItem[]): Promise<GroupRow[]> {
    const opens = items.flatMap((i) => (i.kind === 'open' ? [i.row] : []));
    const closes = items.flatMap((i) => (i.kind === 'close' ? [i.row] : []));
    const drawn = items.flatMap((i) => (i.kind === 'drawn' ? [i.close ? { ...i.row, close: i.close } : i.row] : []));
    const now = this.clock();
    const params: unknown[] = [JSON.stringify(opens), JSON.stringify(closes), now];
    // Drawn opens go to the four-argument overload (the migration reservation_leases).
    if (drawn.length) params.push(JSON.stringify(drawn));
    const out = await this.sql<Omit<GroupRow, 'now'>>(
      `SELECT kind, id, granted::text AS granted, reason, existing_id, outcome, charged::text AS charged, applied
         FROM sy_ledger_group($1::jsonb, $2::jsonb, ${drawn.length ? '$4::jsonb, ' : ''}$3::timestamptz)`,
      params,
    );
    const byItem = new Map(out.map((r) => [`${r.kind}:${r.id}`, Object.assign(r, { now })]));
    return items.map((i) => byItem.get(`${i.kind}:${i.row.id}`)!);
  }

  /**
   * SQL straight through the injected pool, else through Prisma. Every money call is one statement, so one chosen as
   * a deadlock's victim changed nothing and is run again (at most DEADLOCK_RETRIES times): locks are taken in one
   * order everywhere (the migrations one_money_body, partition_lock_order), this is the net under that rule.
   */
  private async sql<T>(text: string, params: unknown[]): Promise<T[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        if (this.pool) return (await this.pool.query(text, params)).rows as T[];
        return await this.db.$queryRawUnsafe<T[]>(text, ...params);
      } catch (e) {
        if (attempt >= DEADLOCK_RETRIES || !isDeadlock(e)) throw e;
      }
    }
  }

  /**
   * Reserves `bound` (at least `minimum`) and inserts the generation record in one transaction, or finds the
   * generation its Idempotency-Key already names. Throws 402/403 when nothing fits, 404 for an unknown organization.
   */
  async open(row: OpenRow): Promise<Opened> {
    const { granted, reason, existing_id, now } = await this.group.submit({ kind: 'open', row });
    if (reason === 'idempotent_replay') return { replayOf: existing_id! };
    if (reason === 'idempotency_conflict') return { conflictWith: existing_id! };
    if (reason) refuse(reason);
    this.metrics?.moneyReserved.inc({}, granted!);
    return { granted: money(granted!), createdAt: now };
  }

  /**
   * Records a generation granted from a lease (the migration reservation_leases): its bound moves from the lease's
   * reservation to its own, in the next group (`background`: gathered for `GATHER_MS` first). `closeWaitMs`: the record
   * first waits up to that long here for its close, to be written once with it (a stream's: STREAM_RECORD_WAIT_MS),
   * else alone once the time is up or someone asks for it (`writeNow`). Resolves to what it holds: its bound, or 0 when
   * the lease was gone.
   */
  async openDrawn(row: DrawnRow, opts: { background?: boolean; closeWaitMs?: number } = {}): Promise<Decimal> {
    // An if, not a conditional expression: in one, V8 names the executor after the other branch (the walk counts names).
    let written: Promise<GroupRow>;
    if (opts.closeWaitMs) {
      written = new Promise((resolve, reject) => {
        this.awaitingClose.set(row.id, { row, resolve, reject, timer: setTimeout(() => this.writeNow(row.id), opts.closeWaitMs) });
      });
    } else written = this.group.submit({ kind: 'drawn', row }, opts);
    const { granted } = await written;
    const g = money(granted!);
    this.metrics?.moneyReserved.inc({}, g);
    return g;
  }

  /** A drawn record waiting for its close (`closeWaitMs`) is written now, alone (gathered); its `openDrawn` resolves as it commits. */
  writeNow(generationId: string): void {
    const awaiting = this.awaitingClose.get(generationId);
    if (!awaiting) return;
    this.awaitingClose.delete(generationId);
    clearTimeout(awaiting.timer);
    this.group.submit({ kind: 'drawn', row: awaiting.row }, { background: true }).then(awaiting.resolve, awaiting.reject);
  }

  /** Takes a lease of `amount` for one caller while their room is at least `headroom` (`sy_lease_take`). */
  async takeLease(l: { id: string; organizationId: string; apiKeyId: string | null; userId: string | null; amount: MoneyLike; headroom: MoneyLike; expiresAt: Date }): Promise<LeaseTaken> {
    const [r] = await this.sql<{ granted: string | null; reason: string | null }>(
      `SELECT granted::text AS granted, reason FROM sy_lease_take($1, $2, $3, $4, $5::numeric, $6::numeric, $7::timestamptz, $8::timestamptz)`,
      [l.id, l.organizationId, l.apiKeyId, l.userId, toStorage(l.amount), toStorage(l.headroom), l.expiresAt, this.clock()],
    );
    return r.granted === null ? { refused: r.reason ?? 'refused' } : { granted: money(r.granted) };
  }

  /** Extends the given leases to `expiresAt`, revoked ones excepted; returns those still held, each with whether it is revoked. */
  async renewLeases(ids: string[], expiresAt: Date): Promise<Map<string, { revoked: boolean }>> {
    const rows = await this.sql<{ id: string; revoked: boolean }>(`SELECT id, revoked FROM sy_lease_renew($1::text[], $2::timestamptz)`, [ids, expiresAt]);
    return new Map(rows.map((r) => [r.id, { revoked: r.revoked }]));
  }

  /** Gives back what is left of a lease (its drawn opens have all committed). */
  async returnLease(id: string): Promise<void> {
    await this.sql(`SELECT outcome FROM sy_settle($1, 0, true, $2::timestamptz)`, [id, this.clock()]);
  }

  /**
   * Revokes every lease of a key (its limit or period changed, or it was disabled or revoked): nothing leased under the
   * old terms is drawn from again once its process knows (shared/billing/leases.ts: at its next renewal), and the
   * requests it granted before still move their bounds out of it, so each is charged what its reply shows. The undrawn
   * rest is given back by its process once those have committed, or released by the reaper once expired (the migration
   * lease_revocation). Returns how many.
   */
  async revokeLeasesOfKey(apiKeyId: string): Promise<number> {
    const [r] = await this.sql<{ n: number }>(`SELECT sy_lease_revoke($1, $2::timestamptz) AS n`, [apiKeyId, this.clock()]);
    return r.n;
  }

  /** Releases the leases of processes that stopped renewing them; returns how many. */
  async sweepLeases(): Promise<number> {
    const [r] = await this.sql<{ n: number }>(`SELECT sy_lease_sweep($1::timestamptz) AS n`, [this.clock()]);
    return r.n;
  }

  /**
   * Settles a generation's reservation (charges `cost`, or releases it all) and writes its ending in one
   * transaction. `applied: false` when the generation had already ended: its first ending stands. `background`: nobody
   * waits on the result (the reply went out): it is gathered with others for `GATHER_MS`, and a waited-on item
   * need not queue behind its commit (group-commit.ts). A drawn record waiting here for its close (`openDrawn`'s
   * `closeWaitMs`) is written with it. `after`: the commit of the generation's drawn record; while that record still
   * waits for its group the close goes with it (the record inserted ended, one write instead of an insert and an
   * update: the migration drawn_records_ended_once), else it is submitted once the record commits (a record that fails
   * fails the close).
   */
  async close(row: CloseRow, opts: { background?: boolean; after?: Promise<unknown> } = {}): Promise<{ applied: boolean; charged: Decimal }> {
    const awaiting = this.awaitingClose.get(row.id);
    let r: GroupRow;
    if (awaiting) {
      // Its record waits for it here: both written at once, ended.
      this.awaitingClose.delete(row.id);
      clearTimeout(awaiting.timer);
      const both = this.group.submit({ kind: 'drawn', row: awaiting.row, close: row }, opts);
      both.then(awaiting.resolve, awaiting.reject);
      r = await both;
    } else {
      const item: LedgerItem = { kind: 'close', row };
      const folded = opts.after && this.group.foldIn(item);
      if (opts.after && !folded) await opts.after;
      r = await (folded || this.group.submit(item, opts));
    }
    const charged = money(r.charged!);
    if (r.applied && this.metrics) countSettled(this.metrics, row.model ?? 'unknown', charged, row.usage);
    return { applied: r.applied!, charged };
  }

  /**
   * Undoes a generation refused before any provider was called (its job could not be enqueued): releases its reservation
   * and deletes its record, and the Idempotency-Key that names it, in one transaction. The ledger keeps the reserve and
   * release pair (no net effect). A generation that already ended (its status not in RUNNING_STATUSES)
   * is left as it is. Idempotent; true when it deleted.
   */
  async discard(g: { id: string; organizationId: string; idempotencyKey?: string | null }): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      // sy_settle locks as every money call does (organization, key, member, reservation); the record after it, as a close.
      await tx.$queryRaw`SELECT outcome FROM sy_settle(${g.id}, 0, true, ${this.clock()}::timestamptz)`;
      const [r] = await tx.$queryRaw<Array<{ n: number }>>`
        WITH gone AS (DELETE FROM generations WHERE id = ${g.id} AND status::text = ANY(${[...RUNNING_STATUSES]}::text[]) RETURNING id),
             k AS (DELETE FROM idempotency_keys WHERE organization_id = ${g.organizationId} AND key = ${g.idempotencyKey ?? null} AND generation_id IN (SELECT id FROM gone))
        SELECT COUNT(*)::int AS n FROM gone`;
      return r.n > 0;
    });
  }

  async topUp(organizationId: string, amount: MoneyLike): Promise<Decimal | null> {
    const rows = await this.db.$queryRaw<Array<{ balance: string | null }>>`
      SELECT sy_topup(${organizationId}, ${toStorage(amount)}::numeric, ${this.clock()}::timestamptz)::text AS balance`;
    return rows[0].balance === null ? null : money(rows[0].balance);
  }
}

/** What a discard needs of a new generation: its id, organization and Idempotency-Key. */
export interface NewGenerationIds {
  id: string;
  organizationId: string;
  idempotency?: { key: string };
}

export interface Finish {
  status: 'completed' | 'failed' | 'cancelled';
  /**
   * Real cost to charge. Absent: the reservation is released (failed and cancelled generations cost nothing);
   * a stream that failed, or was cancelled through the API, after producing output passes what it produced.
   */
  cost?: MoneyLike;
  result?: unknown;
  usage?: unknown;
  /** Written only as `AppError.toStored()`. */
  error?: StoredError;
  warnings?: string[];
  routing?: unknown;
  model?: string;
  provider?: string | null;
  finalEndpointSlug?: string | null;
  finishReason?: string | null;
  attemptsCount?: number;
  latencyMs?: number | null;
  queueTimeMs?: number | null;
  generationTimeMs?: number | null;
  upstreamId?: string | null;
}

/** A generation's ending as the ledger's close row (`sy_ledger_group`'s columns; its times in whole milliseconds). */
export function closeRowOf(id: string, f: Finish): CloseRow {
  const row: CloseRow = {
    id,
    status: f.status,
    result: f.result ?? null,
    usage: f.usage ?? null,
    error: f.error ?? null,
    warnings: f.warnings ?? null,
    routing: f.routing ?? null,
    model: f.model ?? null,
    provider: f.provider ?? null,
    final_endpoint_slug: f.finalEndpointSlug ?? null,
    finish_reason: f.finishReason ?? null,
    attempts_count: f.attemptsCount ?? null,
    latency_ms: f.latencyMs == null ? null : Math.round(f.latencyMs),
    queue_time_ms: f.queueTimeMs == null ? null : Math.round(f.queueTimeMs),
    generation_time_ms: f.generationTimeMs == null ? null : Math.round(f.generationTimeMs),
    upstream_id: f.upstreamId ?? null,
  };
  if (f.cost !== undefined) row.cost = toStorage(f.cost);
  return row;
}
