import type { Queue } from 'bullmq';
import { AppError } from '../../shared/errors/app-error';
import type { Logger } from '../../shared/logger';
import { JOB_OPTIONS } from '../../shared/queue/job-catalog';
import type { BusMessage, GenerationBus } from '../../shared/queue/generation-bus';
import type { QueueName } from '../../shared/queue/queue-names';
import type { GenerationService, NewGeneration } from '../../shared/services/generation.service';
import type { Decimal } from '../../shared/billing/money';
import { Mailbox } from './mailbox';

export type FinalMessage = Extract<BusMessage, { type: 'done' | 'failed' | 'cancelled' }>;

export interface Submission {
  id: string;
  granted: Decimal;
  /** Messages from the worker (absent for background jobs). */
  mailbox?: Mailbox;
  /** Stop listening (call when the reply is sent or the client left). */
  detach(): void;
}

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
  ) {}

  get replyChannel(): string {
    return this.bus.channel;
  }

  /**
   * `job(granted)` builds the job payload once the reservation is known (text requests may have their
   * `max_output_tokens` lowered to what was granted). `forget` removes the job from Redis once it ends (its
   * payload carries the caller's text, which `store: false` asks us not to keep).
   */
  async submit<T extends object>(queue: QueueName, gen: NewGeneration, job: (granted: Decimal) => T, opts: { listen: boolean; delayMs?: number; forget?: boolean }): Promise<Submission> {
    const granted = await this.generations.create(gen);
    const mailbox = opts.listen ? new Mailbox() : undefined;
    const detach = mailbox ? this.bus.listen(gen.id, (m) => mailbox.put(m)) : () => {};
    try {
      await this.queues[queue].add(queue, job(granted), { ...JOB_OPTIONS[queue], jobId: gen.id, delay: opts.delayMs, ...(opts.forget && { removeOnComplete: true, removeOnFail: true }) });
    } catch (e) {
      detach();
      this.logger.error('enqueue failed', { err: e, generationId: gen.id });
      await this.generations.finish(gen.id, { status: 'failed', error: { code: 'SERVICE_UNAVAILABLE', message: 'The queue is unavailable' } }).catch(() => undefined);
      throw new AppError('SERVICE_UNAVAILABLE', 'Service temporarily unavailable: repeat later');
    }
    return { id: gen.id, granted, mailbox, detach };
  }

  /**
   * The final message of a generation, or null after `timeoutMs`. Progress messages are skipped. After a Redis
   * reconnect (`recheck`) the final state is read from the database with `reread`, when the caller gives one.
   */
  async waitFinal(sub: Submission, timeoutMs: number, reread?: () => Promise<FinalMessage | null>): Promise<FinalMessage | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return null;
      const m = await sub.mailbox!.next(left);
      if (!m) return null;
      if (m.type === 'done' || m.type === 'failed' || m.type === 'cancelled') return m;
      if (m.type === 'recheck' && reread) {
        const settled = await reread().catch(() => null);
        if (settled) return settled;
      }
    }
  }

  /**
   * Gives up on a generation the caller no longer waits for: it ends as cancelled and costs nothing, unless
   * the worker finished first (then `applied` is false and its ending stands).
   */
  async cancel(id: string, queue: QueueName): Promise<boolean> {
    const job = await this.queues[queue].getJob(id).catch(() => undefined);
    if (job) await job.remove().catch(() => undefined); // fails harmlessly when the job is already running
    const r = await this.generations.finish(id, { status: 'cancelled' });
    return r.applied;
  }
}
