import type { Logger } from '../../shared/logger';
import type { PromisedSettlement, SettlementJournal } from '../../shared/billing/settlement-journal';
import type { JobLock } from '../../shared/queue/job-lock';

/**
 * How stale a stream's last checkpoint may get while content goes out: a second, or this many output tokens
 * (decisions.md section 4: what a process that dies or freezes mid-stream may leave unpaid).
 */
export const CHECKPOINT_MS = 1_000;
export const CHECKPOINT_TOKENS = 200;

/**
 * A stream's checkpoints (shared/billing/settlement-journal.ts `checkpoint`): once content has reached its client, what
 * it has delivered is settled in advance in Redis whenever the last checkpoint is CHECKPOINT_MS or CHECKPOINT_TOKENS
 * behind, so whoever ends the generation after this run died or froze past its lock charges it. A stream shorter than
 * that writes none (nothing on its path); one write at a time, never awaited by the stream; none by a run not surely
 * holding its job. The run's own ending erases what it wrote (`ended`), after that ending is committed or promised.
 */
export class StreamCheckpoints {
  /** performance.now() and output tokens at the last checkpoint (or the first content). */
  private lastAt?: number;
  private lastTokens = 0;
  private writing?: Promise<void>;
  private written = false;

  constructor(
    private readonly journal: SettlementJournal,
    private readonly generationId: string,
    private readonly logger: Logger,
    private readonly lock?: JobLock,
  ) {}

  /** Content went out (`outputTokens` so far); `settlement` is the checkpoint to write, asked only when one is due. */
  delivered(outputTokens: number, settlement: () => PromisedSettlement): void {
    const now = performance.now();
    if (this.lastAt === undefined) {
      this.lastAt = now;
      return;
    }
    if (this.writing || (now - this.lastAt < CHECKPOINT_MS && outputTokens - this.lastTokens < CHECKPOINT_TOKENS)) return;
    if (this.lock && !this.lock.surely()) return;
    this.lastAt = now;
    this.lastTokens = outputTokens;
    this.written = true;
    this.writing = this.journal
      .checkpoint(this.generationId, settlement())
      .catch((err: unknown) => void this.logger.warn('a stream checkpoint not written', { generationId: this.generationId, err }))
      .finally(() => (this.writing = undefined));
  }

  /** The stream's ending is committed or promised: what was checkpointed is erased (a write in flight first). */
  async ended(): Promise<void> {
    await this.writing;
    if (!this.written) return;
    await this.journal.eraseCheckpoint(this.generationId).catch((err: unknown) => void this.logger.warn('a stream checkpoint not erased (it lapses; whoever keeps it finds the generation ended)', { generationId: this.generationId, err }));
  }
}
