import type Redis from 'ioredis';
import { Stop, type StopSignal } from '../stop';
import { listenForJson } from './redis';

/**
 * Why a running job is told to stop (the reason its stop signal carries):
 * - `cancelled`: the generation is cancelled. Either the API ended it already (uncharged) and the job only stops
 *   calling its provider, or (a stream cancelled through the API: GenerationGateway.cancel `chargeStreamed`) the job
 *   ends it as cancelled, charging what it produced when content had gone out; the first ending stands.
 * - `timeout`: the API stopped waiting for a stream that had already sent content (SYNC_WAIT_MS of silence).
 * - `client_gone`: the client of a stream that had already received content disconnected.
 * For `timeout` and `client_gone` (and `cancelled` after content) the job settles the generation itself, charging what was produced
 * (decisions.md section 4), and tells the API (its final message carries that cost).
 */
export type StopReason = 'cancelled' | 'timeout' | 'client_gone';

const STOP_REASONS: ReadonlySet<string> = new Set<StopReason>(['cancelled', 'timeout', 'client_gone']);

export function isStopReason(v: unknown): v is StopReason {
  return typeof v === 'string' && STOP_REASONS.has(v);
}

/** One channel per deployment (queue prefix): every worker process listens, the one running the job acts. */
export function cancelChannel(prefix: string): string {
  return `${prefix}:cancel`;
}

interface CancelMessage {
  id: string;
  reason: StopReason;
}

/** API side: asks whichever worker runs generation `id` to abort its upstream call. */
export function publishStop(redis: Redis, prefix: string, id: string, reason: StopReason): Promise<unknown> {
  const message: CancelMessage = { id, reason };
  return redis.publish(cancelChannel(prefix), JSON.stringify(message)).catch(() => undefined);
}

/**
 * Worker side: subscribes `sub` (a connection of its own, in subscriber mode from now on) and calls `onStop` for
 * every well-formed message. Resolves once subscribed.
 */
export function listenForStops(sub: Redis, prefix: string, onStop: (id: string, reason: StopReason) => void): Promise<void> {
  return listenForJson(sub, cancelChannel(prefix), (m) => {
    if (typeof m.id === 'string' && isStopReason(m.reason)) onStop(m.id, m.reason);
  });
}

/**
 * The stop signals of the jobs this process runs, by job id (the generation id): the processor takes one when its job
 * starts and gives it back when it ends; a stop message (listenForStops) aborts it. BullMQ would make an
 * AbortController for every job of a processor taking a third parameter; the text and embeddings processors take two,
 * and their jobs' signals come from here (a Stop: shared/stop.ts).
 */
export class JobStops {
  private readonly running = new Map<string, Stop>();

  start(jobId: string): Stop {
    const stop = new Stop();
    this.running.set(jobId, stop);
    return stop;
  }

  end(jobId: string, stop: Stop): void {
    if (this.running.get(jobId) === stop) this.running.delete(jobId);
  }

  /** True when a job of this process was told (a stop for another process's job finds nothing here). */
  abort(jobId: string, reason: StopReason): boolean {
    const stop = this.running.get(jobId);
    stop?.abort(reason);
    return stop !== undefined;
  }
}

/** The stop reason of an aborted job signal (`cancelled` for anything else, e.g. a shutdown). */
export function stopReasonOf(signal: StopSignal | undefined): StopReason | undefined {
  if (!signal?.aborted) return undefined;
  return isStopReason(signal.reason) ? signal.reason : 'cancelled';
}
