import { randomBytes } from 'node:crypto';
import type { Db } from '../db/client';
import type { Prisma, UpstreamBatch } from '../db/generated/client';

/** A parked batch line (docs/batches.md "Provider batch APIs"): its generation and the ordinary job it would have had. */
export interface ParkedLine {
  generationId: string;
  batchId: string;
  endpointSlug: string;
  /** The queue of its ordinary job (`text` or `embeddings`): a fallback enqueues `job` there. */
  queue: string;
  job: object;
}

export type UpstreamBatchStatus = 'new' | 'submitting' | 'running' | 'done';

export type { UpstreamBatch };

/** Whether a generation (its routing as recorded) was parked for a provider's batch API. */
export const isParked = (routing: unknown): boolean => typeof (routing as { upstreamBatch?: unknown } | null)?.upstreamBatch === 'string';

/**
 * The rows of the provider batch path: parked lines (`upstream_batch_lines`) and the chunks they are sent in
 * (`upstream_batches`). The API's batch driver parks lines and gathers them into chunks; a worker's chunk job submits,
 * polls and settles a chunk (workers/services/upstream-batch-runner.ts); the reaper asks which parked lines still wait.
 */
export class UpstreamBatches {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Parks a line (its generation is reserved and recorded already). Idempotent per generation. */
  async park(l: ParkedLine): Promise<void> {
    await this.db.upstreamBatchLine.createMany({
      data: [{ generationId: l.generationId, batchId: l.batchId, endpointSlug: l.endpointSlug, queue: l.queue, job: l.job as Prisma.InputJsonValue }],
      skipDuplicates: true,
    });
  }

  /**
   * Gathers a batch's unassigned parked lines into chunks of at most `maxLines` per endpoint: an endpoint's lines once
   * they fill a chunk, once the oldest has waited `gatherMs`, or all of them (`all`: no more lines are coming for now).
   * One transaction, under the batch row's lock (two runs of its driver never gather the same line twice). The new
   * chunks (status `new`); their jobs are the caller's to add.
   */
  async gather(batchId: string, opts: { maxLines: number; gatherMs: number; all: boolean; providerOf: (slug: string) => string }): Promise<UpstreamBatch[]> {
    const due = new Date(this.clock().getTime() - opts.gatherMs);
    return this.db.$transaction(async (tx) => {
      const batch = await tx.$queryRaw<Array<{ organization_id: string }>>`SELECT organization_id FROM batches WHERE id = ${batchId} FOR UPDATE`;
      if (!batch.length) return [];
      const groups = await tx.$queryRaw<Array<{ endpoint_slug: string; n: bigint; oldest: Date }>>`
        SELECT endpoint_slug, count(*) AS n, min(created_at) AS oldest FROM upstream_batch_lines
        WHERE batch_id = ${batchId} AND upstream_batch_id IS NULL GROUP BY endpoint_slug`;
      const made: UpstreamBatch[] = [];
      for (const g of groups) {
        let left = Number(g.n);
        if (!opts.all && left < opts.maxLines && g.oldest > due) continue;
        // Whole chunks first; the rest is a chunk of its own only when it is due.
        while (left > 0 && (left >= opts.maxLines || opts.all || g.oldest <= due)) {
          const id = `ub_${randomBytes(12).toString('hex')}`;
          await tx.upstreamBatch.create({ data: { id, batchId, organizationId: batch[0].organization_id, endpointSlug: g.endpoint_slug, providerId: opts.providerOf(g.endpoint_slug), status: 'new', lines: 0 } });
          const n = await tx.$executeRaw`
            UPDATE upstream_batch_lines SET upstream_batch_id = ${id} WHERE generation_id IN (
              SELECT generation_id FROM upstream_batch_lines WHERE batch_id = ${batchId} AND endpoint_slug = ${g.endpoint_slug} AND upstream_batch_id IS NULL
              ORDER BY created_at, generation_id LIMIT ${opts.maxLines})`;
          made.push(await tx.upstreamBatch.update({ where: { id }, data: { lines: n } }));
          left -= n;
          if (n === 0) break;
        }
      }
      return made;
    });
  }

  /** A batch's chunks that no worker has sent yet: their jobs are added again (a no-op for a job that exists). */
  unsent(batchId: string): Promise<UpstreamBatch[]> {
    return this.db.upstreamBatch.findMany({ where: { batchId, status: 'new' } });
  }

  /**
   * How many of these parked lines a chunk holds whose job has not ended it (the provider has them, or is about to). The
   * others are loose (no chunk yet: the driver's `send` gathers them) or in a chunk that is done (ended, or fallen back to
   * their ordinary job).
   */
  async held(generationIds: readonly string[]): Promise<number> {
    if (!generationIds.length) return 0;
    const [r] = await this.db.$queryRaw<Array<{ n: bigint }>>`
      SELECT count(*) AS n FROM upstream_batch_lines l JOIN upstream_batches u ON u.id = l.upstream_batch_id
      WHERE l.generation_id = ANY(${[...generationIds]}::text[]) AND u.status <> 'done'`;
    return Number(r?.n ?? 0);
  }

  /** Takes a batch's parked lines no chunk holds yet out of the path (the batch stops): their generation ids. */
  async unpark(batchId: string): Promise<string[]> {
    const rows = await this.db.$queryRaw<Array<{ generation_id: string }>>`
      DELETE FROM upstream_batch_lines WHERE batch_id = ${batchId} AND upstream_batch_id IS NULL RETURNING generation_id`;
    return rows.map((r) => r.generation_id);
  }

  /** Asks the workers to cancel a batch's chunks upstream (the batch was cancelled or expired): the chunks newly asked. */
  async requestCancel(batchId: string): Promise<string[]> {
    const rows = await this.db.$queryRaw<Array<{ id: string }>>`
      UPDATE upstream_batches SET cancel_requested = true WHERE batch_id = ${batchId} AND status <> 'done' AND NOT cancel_requested RETURNING id`;
    return rows.map((r) => r.id);
  }

  get(id: string): Promise<UpstreamBatch | null> {
    return this.db.upstreamBatch.findUnique({ where: { id } });
  }

  /** A chunk's lines, in the order they were parked. */
  lines(upstreamBatchId: string): Promise<Array<{ generationId: string; queue: string; job: unknown }>> {
    return this.db.upstreamBatchLine.findMany({ where: { upstreamBatchId }, select: { generationId: true, queue: true, job: true }, orderBy: [{ createdAt: 'asc' }, { generationId: 'asc' }] });
  }

  /**
   * Moves a chunk on, only from the status it was read in (a run that lost to another changes nothing): whether it moved.
   * `submitted_at` is when it went `submitting` (a re-run's search for its provider batch starts there), then `running`.
   */
  async move(id: string, from: UpstreamBatchStatus, to: UpstreamBatchStatus, data: Omit<Prisma.UpstreamBatchUpdateManyMutationInput, 'status'> = {}): Promise<boolean> {
    const now = this.clock();
    const at = to === 'running' || to === 'submitting' ? { submittedAt: now } : to === 'done' ? { endedAt: now } : {};
    const n = await this.db.upstreamBatch.updateMany({ where: { id, status: from }, data: { ...data, ...at, status: to } });
    return n.count === 1;
  }

  /** Which of these provider batch ids a chunk has recorded (a batch another chunk holds is never taken as ours). */
  async recorded(upstreamIds: readonly string[]): Promise<Set<string>> {
    if (!upstreamIds.length) return new Set();
    const rows = await this.db.upstreamBatch.findMany({ where: { upstreamId: { in: [...upstreamIds] } }, select: { upstreamId: true } });
    return new Set(rows.map((r) => r.upstreamId!));
  }

  /** The chunks other than `id` whose create may be on its way (`submitting`): since when, and their lines. */
  async submitting(id: string): Promise<Array<{ since: Date; lines: number }>> {
    const rows = await this.db.upstreamBatch.findMany({ where: { status: 'submitting', id: { not: id } }, select: { submittedAt: true, createdAt: true, lines: true } });
    return rows.map((r) => ({ since: r.submittedAt ?? r.createdAt, lines: r.lines }));
  }

  /** Records what a chunk's run learned without moving it (the uploaded file, a poll, the cancel sent). */
  async note(id: string, data: Pick<Prisma.UpstreamBatchUpdateManyMutationInput, 'upstreamFileId' | 'polls' | 'cancelSent' | 'error'>): Promise<void> {
    await this.db.upstreamBatch.updateMany({ where: { id }, data });
  }

  /**
   * Which of these generations still wait on the provider batch path: parked and not gathered yet, or in a chunk that
   * is not done (the reaper leaves them alone; a fallen-back line is judged by its ordinary job).
   */
  async waiting(ids: readonly string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const rows = await this.db.$queryRaw<Array<{ generation_id: string }>>`
      SELECT l.generation_id FROM upstream_batch_lines l LEFT JOIN upstream_batches u ON u.id = l.upstream_batch_id
      WHERE l.generation_id = ANY(${[...ids]}::text[]) AND (u.id IS NULL OR u.status <> 'done')`;
    return new Set(rows.map((r) => r.generation_id));
  }
}
