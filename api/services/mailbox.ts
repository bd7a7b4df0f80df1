import type { BusMessage } from '../../shared/queue/generation-bus';

/** The messages of one generation as they arrive, read one at a time with a deadline. */
export class Mailbox {
  private readonly queue: BusMessage[] = [];
  private wake?: () => void;
  private closed = false;

  put(m: BusMessage): void {
    this.queue.push(m);
    this.wake?.();
  }

  /** The next message, or null when none arrives within `timeoutMs` (or the mailbox is closed). */
  async next(timeoutMs: number): Promise<BusMessage | null> {
    if (this.queue.length) return this.queue.shift()!;
    if (this.closed) return null;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
    return this.queue.shift() ?? null;
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }
}
