import { randomBytes } from 'node:crypto';
import { DelayedError, Worker, type Job } from 'bullmq';
import type Redis from 'ioredis';
import type { Db } from '../../shared/db/client';
import type { Batch, Generation, Prisma } from '../../shared/db/generated/client';
import { AppError, isAppError } from '../../shared/errors/app-error';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics/metrics';
import type { BatchSettings, Config } from '../../shared/config/env';
import type { Principal } from '../../shared/auth/principal';
import { money, ZERO, type Decimal } from '../../shared/money';
import { RUNNING } from '../../shared/services/generation.service';
import { QUEUES } from '../../shared/queue/queue-names';
import { DEFAULT_CONCURRENCY, type BatchJobData } from '../../shared/queue/job-catalog';
import { readLines, type BatchFiles } from '../../shared/services/batch-files.service';
import type { BatchEndpoint } from '../../shared/schemas/batches.schema';
import { requestHash } from '../middleware/idempotency';
import type { GenerationGateway } from './generation-gateway';
import type { Caller } from './generation-order';
import type { BatchLineKind } from './batch-lines';
import { validateInput } from './batch-validation';

/** A line started and not yet answered: its place in the input and its generation's id. */
interface InFlight {
  line: number;
  offset: number;
  customId: string;
  id: string;
}

/** A line's answer, as its output or error file line. */
interface Answer {
  ok: boolean;
  expired?: boolean;
  json: string;
  cost: Decimal;
}

export interface BatchDriverDeps {
  db: Db;
  files: BatchFiles;
  kinds: Record<BatchEndpoint, BatchLineKind>;
  gateway: GenerationGateway;
  logger: Logger;
  metrics: Metrics;
  clock: () => Date;
  settings: BatchSettings;
}

interface Step {
  more: boolean;
  moved: boolean;
}

/** How long one run of a driver's job steps before it waits in the delayed set (well within its lock). */
const RUN_BUDGET_MS = 5_000;
/** The wait after a step that moved lines. */
const FAST_POLL_MS = 20;

/** How many not-started lines one commit answers `batch_expired` (a part each). */
const EXPIRED_CHUNK = 1000;

const suffixOf = (batchId: string) => batchId.slice('batch_'.length);
/** A line's generation id and output id, derived from the batch and the line: a re-run of the driver finds the same. */
export const lineGenerationId = (batchId: string, prefix: string, line: number) => `${prefix}_${suffixOf(batchId)}l${line}`;
const lineRequestId = (batchId: string, line: number) => `batch_req_${suffixOf(batchId)}l${line}`;

/**
 * The driver of one batch (docs/batches.md): a BullMQ step job of the `batches` queue that runs a step, then
 * re-schedules itself (`moveToDelayed` + DelayedError) until the batch has ended. The batch's row is its state, each
 * step committed under the row's `version`:
 *
 *   validating  → every line checked (the route's schema and mapper) before any runs: `failed` with the errors, or
 *                 `in_progress` with the count
 *   in_progress → the ended lines' answers appended (one part of the output or error file per commit); then up to
 *                 `linesInFlight` lines claimed (committed while still `in_progress`, so a cancel committed first
 *                 starts none of them) and ordered through the services the routes use, each with a generation id
 *                 and Idempotency-Key derived from the batch and the line: a step re-run after a crash re-orders a
 *                 claimed line as a replay, never a second generation
 *   cancelling  → no line starts; running lines finish and are answered; then `cancelled`
 *   past the window → running lines cancelled, lines not started answered `batch_expired`; then `expired`
 *   all answered → `finalizing` → `completed` (the output and error files recorded with the status, in one transaction)
 */
export class BatchDriver {
  constructor(private readonly d: BatchDriverDeps) {}

  /**
   * Steps while the batch moves, for up to RUN_BUDGET_MS: after a step that answered or started lines the next comes
   * soon (FAST_POLL_MS, doubling while nothing moves, up to `pollMs`); then the job waits in the delayed set.
   */
  async run(job: Job<BatchJobData>, token?: string): Promise<void> {
    const started = Date.now();
    let wait = FAST_POLL_MS;
    for (;;) {
      let s: Step;
      try {
        s = await this.step(job.data.batchId);
      } catch (err) {
        // PostgreSQL or the store away: the state is in the row, a later step resumes.
        this.d.logger.warn('batch step failed; it runs again', { batchId: job.data.batchId, err, trace_id: job.data.traceId });
        s = { more: true, moved: false };
      }
      if (!s.more) return;
      wait = s.moved ? FAST_POLL_MS : Math.min(wait * 2, this.d.settings.pollMs);
      if (Date.now() - started + wait > RUN_BUDGET_MS) break;
      await new Promise((r) => setTimeout(r, wait));
    }
    await job.moveToDelayed(Date.now() + wait, token);
    throw new DelayedError();
  }

  /** One step: whether the batch has more to do, and whether lines were answered or started. */
  async step(batchId: string): Promise<Step> {
    const s = await this.stepOnce(batchId);
    return typeof s === 'boolean' ? { more: s, moved: false } : s;
  }

  private async stepOnce(batchId: string): Promise<boolean | Step> {
    const b = await this.d.db.batch.findUnique({ where: { id: batchId } });
    if (!b) return false;
    if (b.status === 'validating') return this.validate(b);
    if (b.status === 'finalizing') return this.finish(b, 'completed');
    if (b.status !== 'in_progress' && b.status !== 'cancelling') return false;
    const kind = this.d.kinds[b.endpoint as BatchEndpoint];
    const expired = this.d.clock() >= b.expiresAt;
    const inFlight = b.inFlight as unknown as InFlight[];

    // 1. The lines that ended are answered; those never recorded (claimed by a run that died before ordering them)
    //    are ordered again, unless the batch stops.
    const rows = inFlight.length ? await this.d.db.generation.findMany({ where: { id: { in: inFlight.map((l) => l.id) } } }) : [];
    const byId = new Map(rows.map((g) => [g.id, g]));
    const answers = new Map<number, Answer>();
    const running: InFlight[] = [];
    const unordered: InFlight[] = [];
    for (const l of inFlight) {
      const g = byId.get(l.id);
      if (!g) unordered.push(l);
      else if (RUNNING.has(g.status)) running.push(l);
      else answers.set(l.line, await this.answer(b, kind, l, g, expired));
    }
    if (expired && b.status === 'in_progress') {
      // Past the window nothing more starts; the lines still running are stopped (uncharged unless they end first).
      for (const l of running) await this.d.gateway.cancel(l.id, kind.queue).catch(() => undefined);
      for (const l of unordered) answers.set(l.line, this.expiredAnswer(b, l));
      return this.expire(b, answers, running);
    }
    if (b.status === 'cancelling') {
      // Claimed but never ordered: they never started, so they never run (and are in neither file).
      const v = await this.commit(b, answers, { inFlight: running });
      if (!v) return true;
      if (running.length) return { more: true, moved: answers.size > 0 };
      return this.finish({ ...b, ...v }, 'cancelled');
    }

    // 2. New lines are claimed while the batch is still in progress, then ordered with the unordered ones.
    const room = this.d.settings.linesInFlight - running.length - unordered.length;
    const claimed = room > 0 && b.completed + b.failed + inFlight.length < b.total ? await this.readFrom(b, room) : { lines: [], next: { line: b.nextLine, offset: Number(b.nextOffset) } };
    const fresh = claimed.lines.map((l) => ({ line: l.line, offset: l.offset, customId: l.customId, id: lineGenerationId(b.id, kind.idPrefix, l.line) }));
    const toOrder = [...unordered, ...fresh];
    const state = await this.commit(b, answers, {
      inFlight: [...running, ...toOrder],
      claim: fresh.length > 0 ? { nextLine: claimed.next.line, nextOffset: claimed.next.offset } : undefined,
    });
    if (!state) return true;
    const bodies = new Map(claimed.lines.map((l) => [l.line, l.body]));
    const refused = new Map<number, Answer>();
    const principal = toOrder.length ? await this.principalOf(b) : null;
    await Promise.all(
      toOrder.map(async (l) => {
        const body = bodies.get(l.line) ?? (await this.lineAt(b, l.offset)).body;
        try {
          if (principal instanceof AppError) throw principal;
          await kind.order(this.callerOf(b, principal!, l, body), body, l.id);
        } catch (e) {
          // Refused before any provider was called (402 when the balance or a limit runs out, 403, 404, 400 ...): the
          // line's answer is that error, and nothing was reserved.
          if (!isAppError(e)) this.d.logger.error('a batch line could not be ordered', { batchId: b.id, line: l.line, err: e });
          refused.set(l.line, this.errorAnswer(b, l, isAppError(e) ? e : toLineError(e), null));
        }
      }),
    );
    const after = { ...b, ...state };
    if (refused.size) {
      const v = await this.commit(after, refused, { inFlight: (after.inFlight as unknown as InFlight[]).filter((l) => !refused.has(l.line)) });
      if (!v) return true;
      Object.assign(after, v);
    }
    if ((after.inFlight as unknown as InFlight[]).length === 0 && after.completed + after.failed >= after.total) return this.finish(after, 'completed');
    return { more: true, moved: answers.size + toOrder.length > 0 };
  }

  private async validate(b: Batch): Promise<boolean> {
    const file = await this.d.db.batchFile.findUnique({ where: { id: b.inputFileId } });
    const kind = this.d.kinds[b.endpoint as BatchEndpoint];
    const now = this.d.clock();
    const result = file ? await validateInput(await this.d.files.from(file, 0), b.endpoint, kind) : { errors: [{ code: 'invalid_file', message: `Input file ${b.inputFileId} is gone`, param: 'input_file_id', line: null }], total: 0, lastLine: 0 };
    const data: Prisma.BatchUpdateManyMutationInput = result.errors.length
      ? { status: 'failed', failedAt: now, errors: { object: 'list', data: result.errors } as unknown as Prisma.InputJsonValue, version: { increment: 1 } }
      : { status: 'in_progress', inProgressAt: now, total: result.total, version: { increment: 1 } };
    const n = await this.d.db.batch.updateMany({ where: { id: b.id, status: 'validating', version: b.version }, data });
    return n.count === 1 ? !result.errors.length : true;
  }

  /**
   * Appends `answers` (a part of the output file and one of the error file) and commits them with the new state, if
   * no other run committed since `b` was read. The new state's fields, or null when another run got there first.
   */
  private async commit(b: Batch, answers: Map<number, Answer>, change: { inFlight: InFlight[]; claim?: { nextLine: number; nextOffset: number } }): Promise<Partial<Batch> | null> {
    if (!answers.size && !change.claim && change.inFlight.length === (b.inFlight as unknown[]).length) return {};
    const ok = [...answers.values()].filter((a) => a.ok);
    const bad = [...answers.values()].filter((a) => !a.ok);
    const outputParts = [...(b.outputParts as string[])];
    const errorParts = [...(b.errorParts as string[])];
    const write = async (lines: Answer[], parts: string[], tag: string) => {
      if (!lines.length) return 0;
      const bytes = Buffer.from(lines.map((a) => `${a.json}\n`).join(''));
      const key = `${b.id}_${tag}_${b.version}_${randomBytes(4).toString('hex')}`;
      await this.d.files.putPart(key, bytes);
      parts.push(key);
      return bytes.length;
    };
    const outBytes = await write(ok, outputParts, 'o');
    const errBytes = await write(bad, errorParts, 'e');
    const cost = [...answers.values()].reduce((s, a) => s.plus(a.cost), ZERO);
    const data = {
      inFlight: change.inFlight as unknown as Prisma.InputJsonValue,
      outputParts,
      errorParts,
      outputBytes: b.outputBytes + BigInt(outBytes),
      errorBytes: b.errorBytes + BigInt(errBytes),
      outputLines: b.outputLines + ok.length,
      errorLines: b.errorLines + bad.length,
      completed: b.completed + ok.length,
      failed: b.failed + bad.length,
      cost: money(b.cost).plus(cost),
      version: b.version + 1,
      ...(change.claim && { nextLine: change.claim.nextLine, nextOffset: BigInt(change.claim.nextOffset) }),
    };
    const n = await this.d.db.batch.updateMany({ where: { id: b.id, version: b.version, ...(change.claim && { status: 'in_progress' }) }, data });
    if (n.count !== 1) return null;
    for (const a of answers.values()) this.d.metrics.batchLines.inc({ status: a.ok ? 'completed' : a.expired ? 'expired' : 'failed' });
    return data as unknown as Partial<Batch>;
  }

  /** Past the window: the lines not started are answered `batch_expired`, a chunk per step; once none runs, `expired`. */
  private async expire(b: Batch, answers: Map<number, Answer>, running: InFlight[]): Promise<boolean> {
    const rest = await this.readFrom(b, EXPIRED_CHUNK);
    for (const l of rest.lines) answers.set(l.line, this.expiredAnswer(b, { line: l.line, customId: l.customId }));
    const v = await this.commit(b, answers, { inFlight: running, claim: rest.lines.length ? { nextLine: rest.next.line, nextOffset: rest.next.offset } : undefined });
    if (!v || running.length || rest.lines.length) return true;
    return this.finish({ ...b, ...v }, 'expired');
  }

  /** The batch's last commit: its output and error files recorded with its final status, in one transaction. */
  private async finish(b: Batch, status: 'completed' | 'cancelled' | 'expired'): Promise<boolean> {
    const now = this.d.clock();
    if (status === 'completed' && b.status !== 'finalizing') {
      const n = await this.d.db.batch.updateMany({ where: { id: b.id, version: b.version }, data: { status: 'finalizing', finalizingAt: now, version: { increment: 1 } } });
      if (n.count !== 1) return true;
      b = { ...b, status: 'finalizing', version: b.version + 1 };
    }
    const file = (parts: string[], bytes: bigint, lines: number, name: string) =>
      parts.length ? { id: `file-${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`, organizationId: b.organizationId, apiKeyId: b.apiKeyId, userId: b.userId, purpose: 'batch_output', filename: `${b.id}_${name}.jsonl`, bytes, lines, storageKey: parts[0], parts, createdAt: now } : null;
    const output = file(b.outputParts as string[], b.outputBytes, b.outputLines, 'output');
    const error = file(b.errorParts as string[], b.errorBytes, b.errorLines, 'error');
    const at = status === 'completed' ? { completedAt: now } : status === 'cancelled' ? { cancelledAt: now } : { expiredAt: now };
    const ended = await this.d.db.$transaction(async (tx) => {
      const n = await tx.batch.updateMany({
        where: { id: b.id, version: b.version },
        data: { status, ...at, outputFileId: output?.id ?? null, errorFileId: error?.id ?? null, inFlight: [], version: { increment: 1 } },
      });
      if (n.count !== 1) return false;
      for (const f of [output, error]) if (f) await tx.batchFile.create({ data: f });
      return true;
    });
    return !ended;
  }

  /** Up to `max` lines from the driver's place in the input (blank lines skipped), and the place after them. */
  private async readFrom(b: Batch, max: number): Promise<{ lines: Array<{ line: number; offset: number; customId: string; body: Record<string, unknown> }>; next: { line: number; offset: number } }> {
    const file = await this.d.db.batchFile.findUnique({ where: { id: b.inputFileId } });
    const next = { line: b.nextLine, offset: Number(b.nextOffset) };
    const lines: Array<{ line: number; offset: number; customId: string; body: Record<string, unknown> }> = [];
    if (!file) return { lines, next };
    const stream = await this.d.files.from(file, next.offset);
    try {
      for await (const l of readLines(stream, next.offset, next.line)) {
        const start = next.offset;
        next.line = l.number + 1;
        next.offset = l.end;
        if (!l.text.trim()) continue;
        const parsed = JSON.parse(l.text) as { custom_id: string; body: Record<string, unknown> };
        lines.push({ line: l.number, offset: start, customId: parsed.custom_id, body: parsed.body });
        if (lines.length >= max) break;
      }
    } finally {
      (stream as unknown as { destroy?: () => void }).destroy?.();
    }
    return { lines, next };
  }

  /** The line that starts at `offset` of the input (a claimed line ordered again after a crash). */
  private async lineAt(b: Batch, offset: number): Promise<{ body: Record<string, unknown> }> {
    const file = await this.d.db.batchFile.findUnique({ where: { id: b.inputFileId } });
    if (!file) throw new AppError('NOT_FOUND', `Input file ${b.inputFileId} is gone`);
    const stream = await this.d.files.from(file, offset);
    try {
      for await (const l of readLines(stream, offset)) return { body: (JSON.parse(l.text) as { body: Record<string, unknown> }).body };
    } finally {
      (stream as unknown as { destroy?: () => void }).destroy?.();
    }
    throw new Error(`batch ${b.id}: no line at offset ${offset}`);
  }

  /**
   * Who the batch's lines run as now: its creator, with the API key's models and state as they are (a key revoked or
   * disabled meanwhile starts no more lines: each answers 401, as its requests would).
   */
  private async principalOf(b: Batch): Promise<Principal | AppError> {
    const p = b.principal as unknown as Principal;
    if (p.kind !== 'key') return p;
    const key = await this.d.db.apiKey.findUnique({ where: { id: p.keyId }, select: { revokedAt: true, disabledAt: true, allowedModels: true } });
    if (!key || key.revokedAt) return new AppError('api_key_revoked', 'The API key that created this batch has been revoked');
    if (key.disabledAt) return new AppError('UNAUTHORIZED', 'The API key that created this batch is disabled');
    return { ...p, allowedModels: key.allowedModels };
  }

  /** Who a line runs as, with an Idempotency-Key of the batch and the line. */
  private callerOf(b: Batch, principal: Principal, l: Pick<InFlight, 'line'>, body: unknown): Caller {
    const caller = b.apiKeyId ?? `user ${b.userId}`;
    return {
      principal,
      traceId: b.traceId ?? b.id,
      idempotency: { key: `${b.id} line ${l.line}`, caller, hash: requestHash(caller, 'POST', b.endpoint, body) },
    };
  }

  private async answer(b: Batch, kind: BatchLineKind, l: InFlight, g: Generation, expired: boolean): Promise<Answer> {
    const cost = money(g.clientCost);
    if (g.status === 'completed') {
      const body = await kind.answer(g);
      return { ok: true, cost, json: JSON.stringify({ id: lineRequestId(b.id, l.line), custom_id: l.customId, response: { status_code: 200, request_id: g.id, body }, error: null }) };
    }
    if (g.status === 'cancelled' && expired) return { ...this.expiredAnswer(b, l, g.id), cost };
    return { ...this.errorAnswer(b, l, lineError(g), g.id), cost };
  }

  private errorAnswer(b: Batch, l: Pick<InFlight, 'line' | 'customId'>, e: AppError, requestId: string | null): Answer {
    const json = JSON.stringify({ id: lineRequestId(b.id, l.line), custom_id: l.customId, response: { status_code: e.status, request_id: requestId, body: e.toBody(b.traceId ?? b.id) }, error: null });
    return { ok: false, cost: ZERO, json };
  }

  private expiredAnswer(b: Batch, l: Pick<InFlight, 'line' | 'customId'>, requestId: string | null = null): Answer {
    const e = new AppError('batch_expired', `This line was not done within the batch's completion window (${b.completionWindow})`);
    const json = JSON.stringify({ id: lineRequestId(b.id, l.line), custom_id: l.customId, response: { status_code: e.status, request_id: requestId, body: e.toBody(b.traceId ?? b.id) }, error: { code: 'batch_expired', message: e.message } });
    return { ok: false, expired: true, cost: ZERO, json };
  }
}

/** The error an ended generation that did not complete answers with. */
function lineError(g: Pick<Generation, 'status' | 'error'>): AppError {
  if (g.status === 'failed' && g.error) return AppError.fromStored(g.error as never);
  return new AppError('CONFLICT', 'The generation was cancelled');
}

function toLineError(e: unknown): AppError {
  return new AppError('INTERNAL_ERROR', `The line could not be started: ${(e as Error)?.message ?? String(e)}`);
}

/**
 * The BullMQ Worker of the `batches` queue: every API process runs one (the driver orders lines through the services
 * the routes use, which live in the API). A process that dies leaves its drivers' jobs to any other's stalled check.
 */
export function startBatchDriver(driver: BatchDriver, connection: Redis, config: Pick<Config, 'queuePrefix' | 'worker'>, logger: Logger): Worker {
  const w = new Worker<BatchJobData>(QUEUES.batches, (job, token) => driver.run(job, token), {
    connection,
    prefix: config.queuePrefix,
    concurrency: config.worker.concurrency.batches ?? DEFAULT_CONCURRENCY.batches,
    // A driver's job may be re-run after any number of stalls: its state is the batch's row, each commit guarded.
    maxStalledCount: 1_000,
    lockDuration: config.worker.lockDurationMs,
    stalledInterval: config.worker.stalledIntervalMs,
  });
  w.on('error', (err) => logger.error('batch driver error', { err }));
  return w;
}
