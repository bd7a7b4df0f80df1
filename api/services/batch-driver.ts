import { DelayedError, type Job } from 'bullmq';
import type { Db } from '../../shared/db/client';
import type { Batch, Prisma } from '../../shared/db/generated/client';
import { AppError, isAppError } from '../../shared/errors/app-error';
import type { Logger } from '../../shared/logger';
import type { Metrics } from '../../shared/metrics/metrics';
import type { BatchSettings } from '../../shared/config/env';
import type { Principal } from '../../shared/auth/principal';
import { money, ZERO } from '../../shared/money';
import { RUNNING } from '../../shared/services/generation.service';
import type { BatchJobData } from '../../shared/queue/job-catalog';
import type { BatchFiles } from '../../shared/services/batch-files.service';
import type { BatchEndpoint } from '../../shared/schemas/batches.schema';
import { requestHash } from '../middleware/auth';
import type { GenerationGateway } from './generation-gateway';
import type { Caller } from './generation-order';
import { toLineError, type BatchLineKind } from './batch-lines';
import { answerOf, errorAnswer, expiredAnswer, lineGenerationId, type Answer } from './batch-answers';
import { BatchInput, lineTooLarge, type InputLine } from './batch-input';
import { failedTransiently, grantedAs, nextTry, orderInTurn, refusalOf, retryOf, type InFlight, type Ordered } from './batch-orders';
import type { BatchUpstream } from './batch-upstream';
import { isParked } from '../../shared/services/upstream-batches.service';
import { validateInput } from './batch-validation';
import type { BatchSteps } from './batch-steps';
import { withContent } from '../../shared/db/generation-reads';

export interface BatchDriverDeps {
  db: Db;
  files: BatchFiles;
  kinds: Record<BatchEndpoint, BatchLineKind>;
  gateway: GenerationGateway;
  logger: Logger;
  metrics: Metrics;
  clock: () => Date;
  settings: BatchSettings;
  /** Lines parked for providers' own batch APIs (docs/batches.md "Provider batch APIs"); without it, none are. */
  upstream?: BatchUpstream;
  /** One step of a batch at a time across runs (batch-steps.ts); without it two runs' steps may overlap, their commits still guarded. */
  steps?: BatchSteps;
}

/** What a step did: whether the batch has more to do, lines were answered or started, it only waits on providers (`BatchUpstream.idle`). */
type Step = { more: boolean; moved: boolean; idle?: boolean };

/** How long one run of a driver's job steps before it waits in the delayed set (well within its lock). */
const RUN_BUDGET_MS = 5_000;
/** The wait after a step that moved lines. */
const FAST_POLL_MS = 20;

/** How many lines a step takes while every line in flight is parked for a provider's batch API. */
const PARKED_TAKE = 1_000;

/** How many not-started lines one commit answers `batch_expired` (a part each). */
const EXPIRED_CHUNK = 1000;

/**
 * The driver of one batch (docs/batches.md): a BullMQ step job of the `batches` queue that runs a step, then
 * re-schedules itself (`moveToDelayed` + DelayedError) until the batch has ended. The batch's row is its state, each
 * step committed under the row's `version`:
 *
 *   validating  → every line checked (the route's schema and mapper) before any runs: `failed` with the errors, or
 *                 `in_progress` with the count
 *   in_progress → the ended lines' answers appended (one part of the output or error file per commit); then up to
 *                 `linesInFlight` lines taken (committed while still `in_progress`, so a cancel committed first
 *                 starts none of them) and ordered through the services the routes use, each with a generation id
 *                 and Idempotency-Key derived from the batch and the line: a step re-run after a crash re-orders a
 *                 taken line as a replay, never a second generation
 *   cancelling  → no line starts; running lines finish and are answered; then `cancelled`
 *   past the window → running lines cancelled, lines not started answered `batch_expired`; then `expired`
 *   all answered → `finalizing` → `completed` (the output and error files recorded with the status, in one transaction)
 */
export class BatchDriver {
  private readonly input: BatchInput;

  constructor(private readonly d: BatchDriverDeps) {
    this.input = new BatchInput({ db: d.db, files: d.files, maxLineBytes: d.settings.maxLineBytes });
  }

  /**
   * Steps while the batch moves, for up to RUN_BUDGET_MS: after a step that answered or started lines the next comes
   * soon (FAST_POLL_MS, doubling while nothing moves, up to `pollMs`; up to `upstreamPollMs` while the batch only waits
   * on providers' batch APIs, BatchUpstream.idle); then the job waits in the delayed set, its wait kept in its data for
   * the next run (a chunk that ends promotes the job).
   */
  async run(job: Job<BatchJobData>, token?: string): Promise<void> {
    const started = Date.now();
    let wait = job.data.waitMs ?? FAST_POLL_MS;
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
      wait = s.moved ? FAST_POLL_MS : Math.min(wait * 2, s.idle ? this.d.settings.upstreamPollMs : this.d.settings.pollMs);
      if (Date.now() - started + wait > RUN_BUDGET_MS) break;
      await new Promise((r) => setTimeout(r, wait));
    }
    if (wait !== job.data.waitMs) await job.updateData({ ...job.data, waitMs: wait });
    await job.moveToDelayed(Date.now() + wait, token);
    throw new DelayedError();
  }

  /** One step: whether the batch has more to do, and whether lines were answered or started. */
  async step(batchId: string): Promise<Step> {
    const s = this.d.steps ? await this.d.steps.exclusive(batchId, () => this.stepOnce(batchId)) : await this.stepOnce(batchId);
    return s === undefined ? { more: true, moved: false } : typeof s === 'boolean' ? { more: s, moved: false } : s;
  }

  private async stepOnce(batchId: string): Promise<boolean | Step> {
    const b = await this.d.db.batch.findUnique({ where: { id: batchId } });
    if (!b) return false;
    if (b.status === 'validating') return this.validate(b);
    if (b.status === 'finalizing') return this.finish(b, 'completed');
    if (b.status !== 'in_progress' && b.status !== 'cancelling') return false;
    const kind = this.d.kinds[b.endpoint as BatchEndpoint];
    const expired = this.d.clock() >= b.expiresAt;
    const now = this.d.clock().getTime();
    const inFlight = b.inFlight as unknown as InFlight[];

    // 1. The lines that ended are answered, or tried again after a transient failure; those without a generation are
    //    ordered now (taken by a run that died before ordering them; a retry whose back-off is over), or keep waiting
    //    (for money, for their back-off). States first (a parked line waits long), whole records of the ended.
    const states = inFlight.length ? await this.d.db.generation.findMany({ where: { id: { in: inFlight.map((l) => l.id) } }, select: { id: true, status: true, routing: true } }) : [];
    const byId = new Map(states.map((g) => [g.id, g]));
    const endedIds = states.filter((g) => !RUNNING.has(g.status)).map((g) => g.id);
    const ended = new Map((endedIds.length ? await withContent(this.d.db, await this.d.db.generation.findMany({ where: { id: { in: endedIds } } })) : []).map((g) => [g.id, g]));
    const answers = new Map<number, Answer>();
    const running: InFlight[] = [];
    const unordered: InFlight[] = [];
    const waiting: InFlight[] = [];
    const backingOff: InFlight[] = [];
    let changed = false;
    const parked = new Set<string>();
    for (const l of inFlight) {
      const s = byId.get(l.id);
      const g = ended.get(l.id);
      if (!s) (l.waitsForFunds ? waiting : (l.retryAt ?? 0) > now ? backingOff : unordered).push(l);
      else if (!g) {
        running.push(l);
        if (isParked(s.routing)) parked.add(l.id);
      }
      // A cancel stopped it before it ran (a parked line never sent, or left out by its provider): in neither file.
      else if (b.status === 'cancelling' && g.status === 'cancelled' && money(g.clientCost).isZero()) continue;
      else if (b.status === 'in_progress' && !expired && failedTransiently(g) && (l.retryAt !== undefined || retryOf(l, now, this.d.settings.lineRetryMs))) {
        // Failed for a while (PostgreSQL or Redis away), charged nothing: tried again on a generation of its own once its
        // back-off is over, with the line's Idempotency-Key (the failed try holds it no more); the failure stays its answer
        // if the batch stops first, or once the retries' window is over.
        if (l.retryAt === undefined) {
          backingOff.push(retryOf(l, now, this.d.settings.lineRetryMs)!);
          changed = true;
        } else if (l.retryAt > now) backingOff.push(l);
        else unordered.push(nextTry(l, b.id, kind.idPrefix));
      } else answers.set(l.line, await answerOf(b, kind, l, g, expired));
    }
    const notStarted = [...unordered, ...waiting, ...backingOff];
    if (expired && b.status === 'in_progress') {
      // Past the window nothing more starts; the lines still running are stopped (uncharged unless they end first), a
      // provider's batch by its worker (what the provider finished is still charged and answered). A parked line fallen
      // back to its ordinary job is stopped as an ordinary one (a step while its chunk still settles leaves it to the next).
      const onPath = parked.size ? ((await this.d.upstream?.onPath([...parked])) ?? parked) : parked;
      for (const l of running) if (!onPath.has(l.id)) await this.d.gateway.cancel(l.id, kind.queue).catch(() => undefined);
      if (parked.size) await this.d.upstream?.stop(b, kind.queue);
      for (const l of notStarted) answers.set(l.line, expiredAnswer(b, l));
      return this.expire(b, answers, running);
    }
    if (b.status === 'cancelling') {
      if (parked.size) await this.d.upstream?.stop(b, kind.queue);
      // Taken but not ordered (or waiting for a try): they never started, so they never run (and are in neither file).
      const v = await this.commit(b, answers, { inFlight: running });
      if (!v) return true;
      if (running.length) return { more: true, moved: answers.size > 0 };
      return this.finish({ ...b, ...v }, 'cancelled');
    }

    // 2. New lines are taken while the batch is still in progress, then ordered with the unordered ones; the lines
    // waiting for money are tried again once lines of the batch ended (none is taken meanwhile: they would wait too).
    // Parked lines hold no worker slot: up to `maxParked` of them run beside `linesInFlight` ordinary ones, and while
    // every line in flight is parked a step takes up to PARKED_TAKE at once (chunks then fill before their gather ends).
    const maxInFlight = this.d.settings.linesInFlight + (this.d.upstream?.maxParked ?? 0);
    const parking = parked.size > 0 && parked.size === running.length;
    const room = waiting.length ? 0 : Math.min(parking ? PARKED_TAKE : this.d.settings.linesInFlight - (running.length - parked.size) - notStarted.length, maxInFlight - running.length - notStarted.length);
    const taken = room > 0 && b.completed + b.failed + inFlight.length < b.total ? await this.input.readFrom(b, room) : { lines: [], next: { line: b.nextLine, offset: Number(b.nextOffset) } };
    const fresh = taken.lines.map((l) => ({ line: l.line, offset: l.offset, customId: l.customId, id: lineGenerationId(b.id, kind.idPrefix, l.line) }));
    const toOrder = [...unordered, ...fresh];
    const retried = waiting.length > 0 && (answers.size > 0 || running.length === 0) ? waiting : [];
    const state = await this.commit(b, answers, {
      inFlight: [...running, ...waiting, ...backingOff, ...toOrder],
      take: fresh.length > 0 ? { nextLine: taken.next.line, nextOffset: taken.next.offset } : undefined,
      write: toOrder.length + retried.length > 0 || changed,
    });
    if (!state) return true;
    const after = { ...b, ...state };
    const outcomes = toOrder.length + retried.length ? await this.order(after, kind, taken.lines, toOrder, retried, running.length, parked) : new Map<number, Ordered | 'wait'>();
    const v = await this.afterOrders(after, kind, outcomes, now);
    if (!v) return true;
    Object.assign(after, v);
    const left = after.inFlight as unknown as InFlight[];
    if (left.length === 0 && after.completed + after.failed >= after.total) return this.finish(after, 'completed');
    // Parked lines go upstream in chunks: all of them once every line is taken or no more may be.
    const all = after.completed + after.failed + left.length >= after.total || left.length >= maxInFlight;
    if (parked.size) await this.d.upstream?.send(after, all);
    const moved = answers.size > 0 || [...outcomes.values()].some((o) => o !== 'wait');
    const idle = parked.size > 0 && (await this.d.upstream?.idle({ moved, takeable: !all, inFlight: left.length, parked: [...parked] })) === true;
    return { more: true, moved, idle };
  }

  /**
   * Orders lines through the service of the batch's endpoint, the money rule in `orderInTurn`: each outcome by line.
   * Orders go out in parallel, those refused for money then one at a time, in line order.
   */
  private async order(b: Batch, kind: BatchLineKind, read: InputLine[], toOrder: InFlight[], waiting: InFlight[], holding: number, parked: Set<string>): Promise<Map<number, Ordered | 'wait'>> {
    const bodies = new Map(read.map((l) => [l.line, l]));
    const principal = await this.principalOf(b);
    const one = async (l: InFlight, whole: boolean): Promise<Ordered> => {
      try {
        if (principal instanceof AppError) throw principal;
        const input = bodies.get(l.line) ?? (await this.input.lineAt(b, l.offset));
        if (!input.body) throw lineTooLarge(input.bytes, this.d.settings.maxLineBytes);
        const sub = await kind.order(this.callerOf(b, principal, l, input.body, whole), input.body, l.id);
        if (sub.parked) parked.add(sub.id);
        return { kind: 'granted', id: sub.id };
      } catch (e) {
        // Refused before any provider was called (402 when the balance or a limit runs out, 403, 404, 400, 413 ...):
        // nothing was reserved. A 503 (PostgreSQL or Redis away) is tried again; anything else is the line's answer.
        if (!isAppError(e)) this.d.logger.error('a batch line could not be ordered', { batchId: b.id, line: l.line, err: e });
        return refusalOf(isAppError(e) ? e : toLineError(e));
      }
    };
    return orderInTurn(one, toOrder, waiting, holding);
  }

  /**
   * Commits what the orders came to: a granted line runs (on the generation its key names), a line refused for money
   * waits, one refused for a while backs off (on a new try's id: its own had no generation), one refused for good is
   * answered. A refused line with a generation (two runs at once: a stalled job re-run's order granted) stays in flight.
   */
  private async afterOrders(b: Batch, kind: BatchLineKind, outcomes: Map<number, Ordered | 'wait'>, now: number): Promise<Partial<Batch> | null> {
    if (!outcomes.size) return {};
    const inFlight = b.inFlight as unknown as InFlight[];
    const refused = (o: Ordered | 'wait' | undefined) => o !== undefined && (o === 'wait' || o.kind !== 'granted');
    const refusedIds = inFlight.filter((l) => refused(outcomes.get(l.line))).map((l) => l.id);
    const recorded = new Set(refusedIds.length ? (await this.d.db.generation.findMany({ where: { id: { in: refusedIds } }, select: { id: true } })).map((g) => g.id) : []);
    const answers = new Map<number, Answer>();
    const next: InFlight[] = [];
    for (const l of inFlight) {
      const o = outcomes.get(l.line);
      if (o === undefined || recorded.has(l.id)) next.push(l);
      else if (o === 'wait') next.push(l.waitsForFunds ? l : { ...l, waitsForFunds: true });
      else if (o.kind === 'granted') next.push(grantedAs(l, o.id));
      else {
        const retry = o.kind === 'transient' ? retryOf(l, now, this.d.settings.lineRetryMs, { batchId: b.id, prefix: kind.idPrefix }) : null;
        if (retry) next.push(retry);
        else answers.set(l.line, errorAnswer(b, l, o.error, null));
      }
    }
    const same = next.length === inFlight.length && next.every((l, i) => l === inFlight[i]);
    return same ? {} : this.commit(b, answers, { inFlight: next, write: true });
  }

  private async validate(b: Batch): Promise<boolean> {
    const file = await this.d.db.batchFile.findUnique({ where: { id: b.inputFileId } });
    const kind = this.d.kinds[b.endpoint as BatchEndpoint];
    const now = this.d.clock();
    const result = file ? await validateInput(await this.d.files.from(file, 0), b.endpoint, kind, this.d.settings.maxLineBytes) : { errors: [{ code: 'invalid_file', message: `Input file ${b.inputFileId} is gone`, param: 'input_file_id', line: null }], total: 0, lastLine: 0 };
    const data: Prisma.BatchUpdateManyMutationInput = result.errors.length
      ? { status: 'failed', failedAt: now, errors: { object: 'list', data: result.errors } as unknown as Prisma.InputJsonValue, version: { increment: 1 } }
      : { status: 'in_progress', inProgressAt: now, total: result.total, version: { increment: 1 } };
    const n = await this.d.db.batch.updateMany({ where: { id: b.id, status: 'validating', version: b.version }, data });
    return n.count === 1 ? !result.errors.length : true;
  }

  /**
   * Appends `answers` (a part of the output file and one of the error file) and commits them with the new state, if no
   * other run committed since `b` was read (`write`: a new version even without answers or takes, as a step that
   * orders lines commits first, or a line's state changed): its new fields, else null.
   */
  private async commit(b: Batch, answers: Map<number, Answer>, change: { inFlight: InFlight[]; take?: { nextLine: number; nextOffset: number }; write?: boolean }): Promise<Partial<Batch> | null> {
    if (!answers.size && !change.take && !change.write && change.inFlight.length === (b.inFlight as unknown[]).length) return {};
    const ok = [...answers.values()].filter((a) => a.ok);
    const bad = [...answers.values()].filter((a) => !a.ok);
    // A new part of the output file and one of the error file, listed only if this commit applies.
    const parts = [await this.d.files.writePart(b.id, b.version, 'output', ok.map((a) => a.json)), await this.d.files.writePart(b.id, b.version, 'error', bad.map((a) => a.json))].filter((p) => p !== null);
    const outBytes = parts.find((p) => p.kind === 'output')?.bytes ?? 0;
    const errBytes = parts.find((p) => p.kind === 'error')?.bytes ?? 0;
    const cost = [...answers.values()].reduce((s, a) => s.plus(a.cost), ZERO);
    const data = {
      inFlight: change.inFlight as unknown as Prisma.InputJsonValue,
      outputBytes: b.outputBytes + BigInt(outBytes),
      errorBytes: b.errorBytes + BigInt(errBytes),
      outputLines: b.outputLines + ok.length,
      errorLines: b.errorLines + bad.length,
      completed: b.completed + ok.length,
      failed: b.failed + bad.length,
      cost: money(b.cost).plus(cost),
      version: b.version + 1,
      ...(change.take && { nextLine: change.take.nextLine, nextOffset: BigInt(change.take.nextOffset) }),
    };
    const applied = await this.d.files.commitParts(b.id, b.version, parts, (tx) => tx.batch.updateMany({ where: { id: b.id, version: b.version, ...(change.take && { status: 'in_progress' }) }, data }));
    if (!applied) return null;
    for (const a of answers.values()) this.d.metrics.batchLines.inc({ status: a.ok ? 'completed' : a.expired ? 'expired' : 'failed' });
    return data as unknown as Partial<Batch>;
  }

  /** Past the window: the lines not started are answered `batch_expired`, a chunk per step; once none runs, `expired`. */
  private async expire(b: Batch, answers: Map<number, Answer>, running: InFlight[]): Promise<boolean> {
    const rest = await this.input.readFrom(b, EXPIRED_CHUNK);
    for (const l of rest.lines) answers.set(l.line, expiredAnswer(b, l));
    const v = await this.commit(b, answers, { inFlight: running, take: rest.lines.length ? { nextLine: rest.next.line, nextOffset: rest.next.offset } : undefined });
    if (!v || running.length || rest.lines.length) return true;
    return this.finish({ ...b, ...v }, 'expired');
  }

  /** The batch's last commit: its output and error files recorded with its final status, in one transaction. */
  private async finish(b: Batch, status: 'completed' | 'cancelled' | 'expired'): Promise<boolean> {
    const now = this.d.clock();
    // Both commits require the status read: a cancel commits `cancelling` without the version (the next step ends it).
    if (status === 'completed' && b.status !== 'finalizing') {
      const n = await this.d.db.batch.updateMany({ where: { id: b.id, version: b.version, status: b.status }, data: { status: 'finalizing', finalizingAt: now, version: { increment: 1 } } });
      if (n.count !== 1) return true;
      b = { ...b, status: 'finalizing', version: b.version + 1 };
    }
    const output = await this.d.files.fileOfParts(b, 'output', { bytes: b.outputBytes, lines: b.outputLines }, now);
    const error = await this.d.files.fileOfParts(b, 'error', { bytes: b.errorBytes, lines: b.errorLines }, now);
    const at = status === 'completed' ? { completedAt: now } : status === 'cancelled' ? { cancelledAt: now } : { expiredAt: now };
    const ended = await this.d.db.$transaction(async (tx) => {
      const n = await tx.batch.updateMany({
        where: { id: b.id, version: b.version, status: b.status },
        data: { status, ...at, outputFileId: output?.id ?? null, errorFileId: error?.id ?? null, inFlight: [], version: { increment: 1 } },
      });
      if (n.count !== 1) return false;
      for (const f of [output, error]) if (f) await tx.batchFile.create({ data: f });
      return true;
    });
    return !ended;
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

  /** Who a line runs as, with an Idempotency-Key of the batch and the line (every try's), for its whole bound or as its call. */
  private callerOf(b: Batch, principal: Principal, l: Pick<InFlight, 'line'>, body: unknown, whole: boolean): Caller {
    const caller = b.apiKeyId ?? `user ${b.userId}`;
    return {
      principal,
      batchId: b.id,
      traceId: b.traceId ?? b.id,
      idempotency: { key: `${b.id} line ${l.line}`, caller, hash: requestHash(caller, 'POST', b.endpoint, body) },
      ...(whole && { wholeBound: true as const }),
    };
  }
}
