import { EventEmitter } from 'node:events';

/**
 * A stop signal in the form undici and the job's code take (`aborted`, `reason`, the `abort` event, and
 * `addEventListener` / `removeEventListener` for it): an upstream call's deadline (shared/providers/api.ts) and a running
 * job's stop (shared/queue/cancel-channel.ts JobStops). Not an AbortController: Node makes an AbortSignal by changing
 * an EventTarget's prototype, and V8 keeps such objects, with the listeners and request state they reference, through
 * young-generation collections (bench/rounds/06-what-v8-kept.md, 07-cheap-flush.md).
 */
export class Stop extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }

  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void {
    if (options?.once) this.once(type, listener);
    else this.on(type, listener);
  }

  removeEventListener(type: 'abort', listener: () => void): void {
    this.off(type, listener);
  }
}

/** What is told to stop takes either a Stop or an AbortSignal (tests, other callers). */
export type StopSignal = AbortSignal | Stop;
