import type { Job, Queue } from 'bullmq';
import { AppError } from '../../shared/errors/app-error';
import type { Logger } from '../../shared/logger';
import { JOB_OPTIONS, STEP_QUEUES, type GenerationJobBase } from '../../shared/queue/job-catalog';
import { Mailbox, publishStop, type StopReason, type GenerationBus } from '../../shared/queue/generation-bus';
import { QUEUES, type QueueName } from '../../shared/queue/queue-names';
import { RUNNING, openRowOf, type GenerationService, type GenerationState, type NewGeneration, type ResponseMode } from '../../shared/services/generation.service';
import { ownerOf } from '../../shared/auth/principal';
import { money, toStorage, type Decimal } from '../../shared/money';
import type Redis from 'ioredis';
import { discardRefused, endGeneration, keepCheckpoint, underCancelFence, type EndingDeps } from '../../shared/billing/ending';
import { PendingRecord, STREAM_RECORD_WAIT_MS } from '../../shared/billing/settlement-journal';
import { addJob, mayClaim, type ClaimTicket } from '../../shared/queue/claims';
import { uncount, workClassOf } from '../../shared/queue/fairness';
import type { LocalLane } from '../../shared/runtime/local-lane';
import type { LeaseDesk } from '../../shared/billing/leases';
import { STOP_GRACE_MS, type FinalMessage, type GenerationOrder, type Submission } from './generation-order';
import { attach } from './idempotent-replay';
import type { Catalog } from '../../shared/catalog/catalog.types';
import type { UpstreamBatches } from '../../shared/services/upstream-batches.service';
import type { TextStreamEvent } from '../../shared/providers/provider.types';
import { takesUpstreamBatch } from '../../shared/providers/batch-routing';

/** Where batch lines bound for a provider's own batch API are parked (docs/batches.md "Provider batch APIs"). */
export interface UpstreamParking {
  catalog: Catalog;
  store: UpstreamBatches;
}

/** A batch line parked for its endpoint's batch API: its batch and the endpoint. */
interface Park {
  batchId: string;
  slug: string;
}

/** How often a cancel that waits for the worker (`chargeStreamed`) reads the generation's state. */
const CANCEL_POLL_MS = 50;

/**
 * Turns a request into a queued generation: reserve and record (one statement), listen, enqueue. Then waits
 * for the worker's messages. Shared by every generation route.
 */
export class GenerationGateway {
  constructor(
    private readonly generations: GenerationService,
    private readonly queues: Record<QueueName, Queue>,
    private readonly bus: GenerationBus,
    private readonly logger: Logger,
    /** Publishes stop messages to the workers (shared/queue/generation-bus.ts). */
    private readonly stops: { redis: Redis; prefix: string },
    /** How generations end (shared/billing/ending.ts): a refused reservation waits for promised settlements, a cancel keeps them. */
    private readonly endings: EndingDeps,
    /** What this process's API shares with its workers: their free slots, and the records of jobs claimed here. */
    private readonly lane: LocalLane,
    /** Reservations granted in memory from this process's leases (shared/billing/leases.ts); without it, none. */
    private readonly leases?: LeaseDesk,
    /** Batch lines for providers' own batch APIs are parked there; without it, every line runs as a job. */
    private readonly parking?: UpstreamParking,
  ) {}

  /**
   * Reserves, records and enqueues one generation of any kind: the record and the job are built here, once, from
   * the order (who asks, the route, the bound and the kind's own job fields).
   */
  order<T extends GenerationJobBase>(o: GenerationOrder<T>): Promise<Submission> {
    const owner = ownerOf(o.caller.principal);
    // Background work (a background response, an async media call, a batch line): nobody waits for its messages.
    const replyTo = workClassOf(o.mode) === 'interactive' ? this.bus.channel : null;
    const park = o.mode === 'batch' ? this.parkOf(o) : undefined;
    return this.submit<T>(
      o.queue,
      {
        id: o.id,
        organizationId: owner.organizationId,
        apiKeyId: owner.apiKeyId,
        userId: owner.userId,
        model: o.model ?? o.primary.id,
        unifiedModelId: o.primary.id,
        requestType: o.requestType,
        apiType: o.apiType,
        responseMode: o.mode,
        request: o.request,
        warnings: o.recordWarnings?.length ? o.recordWarnings : undefined,
        routing: { ...(o.routingQueue && { queue: o.queue }), candidates: o.candidates.map((c) => c.slug), ...(o.dropped !== undefined && { dropped: o.dropped }), ...(park && { upstreamBatch: park.slug }) },
        callBackUrl: o.callBackUrl ?? null,
        sourceGenerationId: o.sourceGenerationId ?? null,
        previousResponseId: o.previousResponseId ?? null,
        traceId: o.caller.traceId,
        bound: o.bound,
        minimum: o.caller.wholeBound ? o.bound : o.minimum,
        idempotency: o.caller.idempotency,
      },
      // Added to the kind's fresh fields, not spread into a new literal: V8 moved every such spread-then-extended object
      // to the old generation, one per request, where only a full collection frees it
      // (bench/rounds/06-what-v8-kept.md).
      (granted) =>
        Object.assign(o.job(granted), {
          generationId: o.id,
          organizationId: owner.organizationId,
          apiKeyId: owner.apiKeyId,
          userId: owner.userId,
          candidates: o.candidates,
          warnings: o.warnings,
          replyTo,
          traceId: o.caller.traceId,
          traceparent: o.caller.traceparent,
          reserved: toStorage(granted),
          ...(o.caller.principal.maxConcurrency && { maxConcurrency: o.caller.principal.maxConcurrency }),
        }) as unknown as T,
      // A capped organization's job may be put back at its start (shared/queue/org-cap.ts): it is never claimed here.
      { listen: replyTo !== null, forget: o.forget, capped: o.caller.principal.maxConcurrency != null, park },
    );
  }

  /**
   * A batch line whose route puts first an endpoint with batch prices, whose provider's batch API takes its operation,
   * is parked for that API (docs/batches.md "Provider batch APIs"); null for anything else.
   */
  private parkOf(o: Pick<GenerationOrder<GenerationJobBase>, 'mode' | 'queue' | 'candidates' | 'caller' | 'upstreamBatch'>): Park | undefined {
    if (!this.parking || o.mode !== 'batch' || !o.caller.batchId || o.upstreamBatch === false) return undefined;
    const operation = o.queue === QUEUES.text ? 'text' : o.queue === QUEUES.embeddings ? 'embeddings' : null;
    const slug = o.candidates[0]?.slug;
    return operation && takesUpstreamBatch(this.parking.catalog, operation, slug) ? { batchId: o.caller.batchId, slug: slug! } : undefined;
  }

  /**
   * The two ways a generation is submitted (docs/architecture.md "Submitting"), chosen here and nowhere else:
   *
   * - `drawn` (submitDrawn): a client waits (sync or stream) for text or embeddings, without an Idempotency-Key, its
   *   organization has no concurrency cap, a worker of this process has a free slot, and this process's lease for the
   *   caller covers the bound. Claimed here at once, its money drawn from the lease in memory; its record commits while
   *   its job runs and rides on its settlement promise.
   * - `reserved`: anything else. Reserved and recorded in one commit, then enqueued in its organization's fair order
   *   (claimed here when a client waits, nothing of its organization waits, and a worker of this process has a free slot;
   *   claimed without an Idempotency-Key, it is `clientOnly`: a later run, its client gone with this process, is an orphan).
   *
   * `job(granted)` builds the job payload once the reservation is known (text requests may have their
   * `max_output_tokens` lowered to what was granted). `forget` removes the job from Redis once it ends (its
   * payload carries the caller's text, which `store: false` asks us not to keep).
   */
  private async submit<T extends object>(queue: QueueName, gen: NewGeneration, job: (granted: Decimal) => T, opts: { listen: boolean; forget?: boolean; capped?: boolean; park?: Park }): Promise<Submission> {
    const claimable = mayClaim(queue, gen.responseMode, opts.capped === true);
    if (this.leases && claimable && !gen.idempotency) {
      const drawn = await this.submitDrawn(this.leases, queue, gen, job, opts);
      if (drawn) return drawn;
    }
    const created = await this.reserve(gen);
    if ('replayOf' in created) return attach(this.generations, this.endings.settlements, created.replayOf, queue, gen, opts.listen);
    const { granted, createdAt } = created;
    if (opts.park) return this.parkLine(queue, gen, job(granted), opts.park, granted, createdAt);
    const mailbox = opts.listen ? new Mailbox() : undefined;
    const detach = mailbox ? this.bus.listen(gen.id, (m) => mailbox.put(m)) : () => {};
    try {
      const ticket = claimable ? this.lane.claimers.hold(this.queues[queue].qualifiedName, gen.organizationId) : null;
      const data = job(granted);
      await this.enqueue(queue, gen, ticket && !gen.idempotency ? { ...data, clientOnly: true } : data, opts, ticket);
    } catch (e) {
      detach();
      return this.enqueueFailed(gen, e);
    }
    return { id: gen.id, queue, granted, mailbox, detach, keyed: gen.idempotency !== undefined, createdAt };
  }

  /**
   * The `drawn` path: a reservation granted from this process's lease (shared/billing/leases.ts) for a job claimed here
   * (shared/queue/claims.ts, `only`: added only if claimed). The whole bound is reserved in PostgreSQL already, so the
   * job runs while the generation's record commits (its bound moving from the lease to its own reservation; a
   * synchronous request's record is gathered with others for `GATHER_MS`, shared/billing/ledger.ts; a stream's waits
   * for its close to be written once with it, up to STREAM_RECORD_WAIT_MS, or until a route asks for it: `recorded`,
   * a background stream reading itself back). Its worker takes the
   * record from the lane (shared/runtime/local-lane.ts) with the job: a reply never goes out for a generation that
   * neither the database nor a settlement promise holds, so its `done` may leave once its promise carries the record
   * (shared/billing/ending.ts endGeneration); every other final message waits for the record's commit. A record that
   * fails before any `done` went out ends the generation for its client as unavailable, and its job is stopped (it
   * settles nothing: there is no record); after a `done`, the promise is kept by the run, its re-run or the reaper. The
   * job is marked `drawn`: a run anywhere else (a re-run after this process died) finds no record in its lane and ends
   * the generation as orphaned, with no second provider call for a client that is gone, unless the first run had
   * promised a reply (then that promise is kept). Null when there is no free slot, no lease with room, or BullMQ would
   * not give the job now: nothing was added, and the request takes the `reserved` path.
   */
  private async submitDrawn<T extends object>(leases: LeaseDesk, queue: QueueName, gen: NewGeneration, job: (granted: Decimal) => T, opts: { forget?: boolean }): Promise<Submission | null> {
    const ticket = this.lane.claimers.hold(this.queues[queue].qualifiedName, gen.organizationId);
    if (!ticket) return null;
    const bound = money(gen.bound);
    const lease = leases.draw({ organizationId: gen.organizationId, apiKeyId: gen.apiKeyId ?? null, userId: gen.userId ?? null }, bound);
    if (!lease) {
      ticket.release();
      return null;
    }
    const row = openRowOf(gen, lease);
    const record = new PendingRecord(row);
    const mailbox = new Mailbox();
    const detach = this.bus.listen(gen.id, (m) => {
      if (m.type === 'done') {
        // Sent only once the record committed or a promise carries it.
        if (record.lost) return;
        record.replied = true;
        return mailbox.put(m);
      }
      if (m.type !== 'failed' && m.type !== 'cancelled') return mailbox.put(m);
      record.committed.then(() => !record.lost && mailbox.put(m), () => undefined);
    });
    this.lane.hand(gen.id, record);
    let added: Awaited<ReturnType<typeof addJob>>;
    try {
      added = await this.enqueue(queue, gen, Object.assign(job(bound), { drawn: true }), { ...opts, only: true }, ticket);
    } catch (e) {
      added = 'not-added';
      this.logger.warn('a job drawn from a lease could not be claimed: reserved instead', { err: e, generationId: gen.id, trace_id: gen.traceId });
    }
    if (added !== 'claimed') {
      // Nothing was added (or the add failed): the draw goes back and the request reserves for itself.
      this.lane.drop(gen.id, record);
      detach();
      leases.undraw(lease, bound);
      return null;
    }
    const stream = gen.responseMode === 'stream';
    const recorded = this.endings.ledger.openDrawn(row, { background: true, ...(stream && { closeWaitMs: STREAM_RECORD_WAIT_MS }) });
    record.commit(recorded);
    recorded.then(
      (g) => leases.opened(lease, g),
      (err: unknown) => {
        leases.opened(lease, null);
        if (record.replied) {
          this.logger.error('the record of a generation replied to on its promise failed: the promise keeps it', { err, generationId: gen.id, trace_id: gen.traceId });
          return;
        }
        record.lost = true;
        this.logger.error('a generation granted from a lease could not be recorded', { err, generationId: gen.id, trace_id: gen.traceId });
        mailbox.put({ type: 'failed', error: new AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable: repeat later').toStored(), id: gen.id, seq: Number.MAX_SAFE_INTEGER });
        void this.stop(gen.id, 'cancelled').catch(() => undefined);
      },
    );
    return { id: gen.id, queue, granted: bound, mailbox, detach, keyed: false, recorded: () => (this.endings.ledger.writeNow(gen.id), recorded) };
  }

  /**
   * A batch line for its endpoint's provider batch API: reserved and recorded like any generation, then parked with the
   * job it would have had (a fallback enqueues exactly that) instead of enqueued; the batch's driver sends it upstream
   * in a chunk. Parking refused (PostgreSQL away) is an enqueue refused: released, the record gone, 503.
   */
  private async parkLine(queue: QueueName, gen: NewGeneration, job: object, park: Park, granted: Decimal, createdAt: Date): Promise<Submission> {
    try {
      await this.parking!.store.park({ generationId: gen.id, batchId: park.batchId, endpointSlug: park.slug, queue, job });
    } catch (e) {
      return this.enqueueFailed(gen, e);
    }
    return { id: gen.id, queue, granted, detach: () => {}, keyed: gen.idempotency !== undefined, createdAt, parked: true };
  }

  /**
   * Adds the job, claimed by the worker of this process holding `ticket` when there is one (a stream's claimed job
   * starts once its route has gone on to write the stream's head: `nextTurn`); `only`: added only if claimed.
   */
  private enqueue(queue: QueueName, gen: Pick<NewGeneration, 'id' | 'responseMode' | 'organizationId'>, data: object, opts: { forget?: boolean; only?: boolean }, ticket: ClaimTicket | null): ReturnType<typeof addJob> {
    const claim = ticket ? { ticket, nextTurn: gen.responseMode === 'stream', only: opts.only } : undefined;
    const fair = { organizationId: gen.organizationId, workClass: workClassOf(gen.responseMode) };
    return addJob(this.queues[queue], data, { ...JOB_OPTIONS[queue], jobId: gen.id, ...(opts.forget && { removeOnComplete: true, removeOnFail: true }) }, claim, fair);
  }

  /**
   * The job could not be enqueued (no provider was called): the reservation is released and the record deleted, in one
   * transaction, so a refused request leaves no generation in the history (docs/decisions.md); the client is told to
   * repeat. Should that transaction fail too, the generation ends failed and released, as before, or the reaper ends it.
   */
  private async enqueueFailed(gen: NewGeneration, e: unknown): Promise<never> {
    this.logger.error('enqueue failed', { err: e, generationId: gen.id, trace_id: gen.traceId });
    await discardRefused(this.endings, gen, (err) => this.logger.error('a generation refused at enqueue was not discarded', { err, generationId: gen.id, trace_id: gen.traceId }));
    throw new AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable: repeat later');
  }

  /**
   * Reserves and records. Refused for money while settlements of the organization are promised but not committed
   * (their replies went out holding the whole reservation): once they are, it is tried again, as it would have
   * been had the client waited for those commits.
   */
  private async reserve(gen: NewGeneration) {
    try {
      return await this.generations.createOrReplay(gen);
    } catch (e) {
      if (!(e instanceof AppError) || (e.status !== 402 && e.status !== 403)) throw e;
      if (!(await this.endings.settlements.waitSettled(gen.organizationId))) throw e;
      return this.generations.createOrReplay(gen);
    }
  }

  /**
   * The final message of a generation, or null after `timeoutMs`. A stream's deltas before it go to `onDelta`; other
   * progress messages are skipped. After a Redis reconnect (`recheck`) the final state is read from the database with
   * `reread`, when the caller gives one.
   */
  async waitFinal(sub: Submission, timeoutMs: number, reread?: () => Promise<FinalMessage | null>, onDelta?: (ev: TextStreamEvent) => void): Promise<FinalMessage | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return null;
      const m = await sub.mailbox!.next(left);
      if (!m) return null;
      if (m.type === 'done' || m.type === 'failed' || m.type === 'cancelled') return m;
      if (m.type === 'delta') onDelta?.(m.event);
      else if (m.type === 'recheck' && reread) {
        const settled = await reread().catch(() => null);
        if (settled) return settled;
      }
    }
  }

  /**
   * Ends a running generation as cancelled, uncharged, unless it ended first (then `applied` is false and its ending
   * stands). A text or embeddings job still waiting is removed; an image or media job is not (it may hold an upstream
   * task): a delayed one runs once more at once, sees the cancel and cancels its task upstream; a running job is told to
   * abort its upstream call. Whoever waits for the generation's reply (any API process) is told it was cancelled.
   *
   * `chargeStreamed` (a cancel the caller asked for: DELETE /v1/responses/{id}, POST /v1/responses/{id}/cancel): a
   * stream whose job is running may have sent content to its client, which is charged however the generation ends
   * (decisions.md section 4). Only its worker knows what it sent and what its provider produced, so it is told to
   * stop and ends the generation itself: cancelled, charged for what was produced once content went out, uncharged
   * otherwise; its final message carries that cost. A worker that has not ended it within STOP_GRACE_MS (gone, or
   * stuck) leaves it to this call, uncharged. Either ending is one settlement, and only the first one counts.
   * True when the generation ended cancelled through this call.
   */
  async cancel(id: string, queue: QueueName, opts: { chargeStreamed?: boolean } = {}): Promise<boolean> {
    const job = await this.queues[queue].getJob(id).catch(() => undefined);
    const data = job?.data as Partial<GenerationJobBase & { mode: ResponseMode }> | undefined;
    const org = data?.organizationId;
    if (!org) return this.cancelFenced(id, queue, job, data, opts);
    // While this cancel decides, no worker can promise the generation's settlement and reply on it (its commit then
    // comes first, and races this one in the database). Unless its worker already replied with the cost (reply, then
    // settle): that ending stands, and is committed now.
    return underCancelFence(this.endings, { organizationId: org, generationId: id }, () => this.cancelFenced(id, queue, job, data, opts));
  }

  /** `cancel`, once no settlement can be promised ahead of it. */
  private async cancelFenced(id: string, queue: QueueName, job: Job | undefined, data: Partial<GenerationJobBase & { mode: ResponseMode }> | undefined, opts: { chargeStreamed?: boolean }): Promise<boolean> {
    // A job that runs in steps (image, media) is never removed: between two steps it may hold an upstream task only its
    // run can cancel, and only the run knows whether it does (data read here may predate the step that created the task).
    // It runs once more at once instead: it sees the cancel, cancels its task upstream if it holds one, and ends.
    const inSteps = STEP_QUEUES.has(queue);
    // Removing fails when the job is running (locked by its worker).
    const removed = job !== undefined && !inSteps && (await job.remove().then(() => true, () => false));
    // A job that never started no longer waits in its organization's fair order.
    if (removed && !job.attemptsStarted && data?.organizationId) await uncount(this.stops.redis, this.queues[queue].qualifiedName, data.organizationId, job.opts.priority, false).catch(() => undefined);
    if (opts.chargeStreamed && job && !removed && data?.mode === 'stream') {
      const ended = await this.stopUntilEnded(id);
      if (ended) return ended === 'cancelled';
    }
    // A stream whose worker did not end it (gone, frozen past its lock, or stuck) charges what its last checkpoint holds:
    // what had reached the client by then (docs/billing-failures.md).
    if (data?.mode === 'stream' && (await keepCheckpoint(this.endings, id, opts.chargeStreamed).catch(() => false))) return false;
    // A running job stops calling its provider (the upstream request is aborted): nobody will receive the work. A step
    // job waiting for its next step (delayed) runs now; one that is running sees the cancel at its next step.
    const stopped = async () => {
      await this.stop(id, 'cancelled');
      if (inSteps) await job?.promote().catch(() => undefined);
    };
    const ended = { generationId: id, organizationId: data?.organizationId ?? '', replyTo: data?.replyTo ?? null };
    const r = await endGeneration(this.endings, null, ended, { kind: 'end', finish: { status: 'cancelled' }, committed: async (s) => void (s.applied && (await stopped())) });
    return r!.applied;
  }

  /**
   * Tells the worker of a running stream to stop as cancelled, and waits up to STOP_GRACE_MS for the generation to
   * end; the status it ended with, or null. The stop is repeated while waiting: one sent before the job's run took
   * its stop signal (a job just fetched, or waiting for its reservation's outcome) reaches nobody.
   */
  private async stopUntilEnded(id: string): Promise<GenerationState['status'] | null> {
    const deadline = Date.now() + STOP_GRACE_MS;
    while (Date.now() < deadline) {
      await this.stop(id, 'cancelled');
      await new Promise((r) => setTimeout(r, CANCEL_POLL_MS));
      const g = await this.generations.state(id).catch(() => null);
      // No record yet: granted from a lease, it is still committing.
      if (g && !RUNNING.has(g.status)) return g.status;
    }
    return null;
  }

  /**
   * Tells the worker running generation `id` to abort its upstream call. With `timeout` or `client_gone` (a
   * stream that already sent content) the worker settles the generation for what was produced and sends its
   * final message; with `cancelled` it ends it as cancelled, charging what a stream produced after content went
   * out, unless the generation has ended already (cancelled uncharged by the API: that ending stands).
   */
  stop(id: string, reason: StopReason): Promise<unknown> {
    return publishStop(this.stops.redis, this.stops.prefix, id, reason);
  }
}
