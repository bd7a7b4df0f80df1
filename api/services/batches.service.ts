import type { Queue } from 'bullmq';
import type { Db } from '../../shared/db/client';
import type { Batch, Prisma } from '../../shared/db/generated/client';
import { AppError } from '../../shared/errors/app-error';
import { timedBase62 } from '../../shared/ids';
import { ownerOf, type Principal } from '../../shared/auth/principal';
import { moneyJson } from '../../shared/formats/format-utils';
import { addBatchDriver } from '../../shared/queue/batch-jobs';
import { promoteIfDelayed } from '../../shared/queue/promote';
import { visibleTo, type BatchFiles } from '../../shared/services/batch-files.service';
import type { BatchStatus, CreateBatchBody, ListBatchesQuery } from '../../shared/schemas/batches.schema';
import type { Logger } from '../../shared/logger';

/** OpenAI's batch object, with `usage.cost_rub`: what the lines were charged, together. */
export interface BatchObject {
  id: string;
  object: 'batch';
  endpoint: string;
  errors: { object: 'list'; data: unknown[] } | null;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  output_file_id: string | null;
  error_file_id: string | null;
  created_at: number;
  in_progress_at: number | null;
  expires_at: number;
  finalizing_at: number | null;
  completed_at: number | null;
  failed_at: number | null;
  expired_at: number | null;
  cancelling_at: number | null;
  cancelled_at: number | null;
  request_counts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
  usage: { cost_rub: number };
}

/** The completion window every batch has (the only one OpenAI offers). */
const WINDOW_MS = 24 * 3600_000;

const unix = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

const inputNotFound = (id: string) => AppError.validation([{ path: '/input_file_id', message: `is not a file with purpose "batch" of yours` }], `Input file ${id} not found`);

/** The statuses a cancel applies to; a batch cancelled or cancelling is answered as it is. */
const CANCELLABLE = ['validating', 'in_progress'];

/**
 * The batches of the Batch API (docs/batches.md): create (the batch recorded `validating` and its driver's job
 * queued), read, list and cancel, scoped like the history. The driver (batch-driver.ts) does the rest.
 */
export class BatchesService {
  constructor(
    private readonly d: { db: Db; files: BatchFiles; queue: Queue; logger: Logger; clock: () => Date },
  ) {}

  view(b: Batch): BatchObject {
    return {
      id: b.id,
      object: 'batch',
      endpoint: b.endpoint,
      errors: (b.errors as BatchObject['errors']) ?? null,
      input_file_id: b.inputFileId,
      completion_window: b.completionWindow,
      status: b.status as BatchStatus,
      output_file_id: b.outputFileId,
      error_file_id: b.errorFileId,
      created_at: unix(b.createdAt)!,
      in_progress_at: unix(b.inProgressAt),
      expires_at: unix(b.expiresAt)!,
      finalizing_at: unix(b.finalizingAt),
      completed_at: unix(b.completedAt),
      failed_at: unix(b.failedAt),
      expired_at: unix(b.expiredAt),
      cancelling_at: unix(b.cancellingAt),
      cancelled_at: unix(b.cancelledAt),
      request_counts: { total: b.total, completed: b.completed, failed: b.failed },
      metadata: (b.metadata as Record<string, string> | null) ?? null,
      usage: { cost_rub: moneyJson(b.cost.toFixed(10)) },
    };
  }

  async create(p: Principal, traceId: string, body: CreateBatchBody): Promise<Batch> {
    const input = await this.d.files.get(p, body.input_file_id).catch(() => null);
    if (!input || input.purpose !== 'batch') throw inputNotFound(body.input_file_id);
    const now = this.d.clock();
    // Recorded while its input is held: a delete of the file waits for this commit and finds the batch (409); one that
    // came first leaves no file to hold.
    const b = await this.d.db.$transaction(async (tx) => {
      if (!(await this.d.files.lockInput(tx, input.id))) throw inputNotFound(body.input_file_id);
      return tx.batch.create({
        data: {
          id: `batch_${timedBase62()}`,
          ...ownerOf(p),
          principal: p as unknown as Prisma.InputJsonValue,
          endpoint: body.endpoint,
          inputFileId: input.id,
          completionWindow: body.completion_window,
          status: 'validating',
          metadata: (body.metadata ?? undefined) as Prisma.InputJsonValue | undefined,
          traceId,
          createdAt: now,
          expiresAt: new Date(now.getTime() + WINDOW_MS),
        },
      });
    });
    try {
      await addBatchDriver(this.d.queue, b);
    } catch (err) {
      this.d.logger.error('batch driver not queued', { err, batchId: b.id, trace_id: traceId });
      await this.d.db.batch.delete({ where: { id: b.id } }).catch(() => undefined);
      throw new AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable: repeat later');
    }
    return b;
  }

  async get(p: Principal, id: string): Promise<Batch> {
    const b = await this.d.db.batch.findFirst({ where: { id, ...visibleTo(p) } });
    if (!b) throw new AppError('NOT_FOUND', `Batch ${id} not found`);
    return b;
  }

  /** Newest first; `after` a batch id of the previous page. */
  async list(p: Principal, q: ListBatchesQuery): Promise<{ data: Batch[]; hasMore: boolean }> {
    const where: Prisma.BatchWhereInput = visibleTo(p);
    const cursor = q.after ? await this.d.db.batch.findFirst({ where: { ...where, id: q.after }, select: { id: true, createdAt: true } }) : null;
    const rows = await this.d.db.batch.findMany({
      where: cursor ? { ...where, OR: [{ createdAt: { lt: cursor.createdAt } }, { createdAt: cursor.createdAt, id: { lt: cursor.id } }] } : where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: q.limit + 1,
    });
    return { data: rows.slice(0, q.limit), hasMore: rows.length > q.limit };
  }

  /**
   * `cancelling`: no line starts after this commit (the driver takes lines only while the batch is in progress, in a
   * commit of its own); the running ones finish and are charged, then the batch is `cancelled` with what ran. The
   * driver's job is woken so it does not wait for its next poll.
   */
  async cancel(p: Principal, id: string): Promise<Batch> {
    const b = await this.get(p, id);
    const n = await this.d.db.batch.updateMany({ where: { id: b.id, status: { in: CANCELLABLE } }, data: { status: 'cancelling', cancellingAt: this.d.clock() } });
    const now = await this.d.db.batch.findUniqueOrThrow({ where: { id: b.id } });
    if (n.count === 0 && now.status !== 'cancelling' && now.status !== 'cancelled') {
      throw new AppError('CONFLICT', `Batch ${b.id} has ended (status ${now.status}) and cannot be cancelled`);
    }
    await promoteIfDelayed(this.d.queue, b.id);
    return now;
  }
}
