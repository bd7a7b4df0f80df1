import type { BusMessage, Mailbox } from '../../shared/queue/generation-bus';
import type { QueueName } from '../../shared/queue/queue-names';
import type { ApiType, IdempotentRequest, RequestType, ResponseMode } from '../../shared/services/generation.service';
import type { GenerationJobBase, PlannedCandidate } from '../../shared/queue/job-catalog';
import type { Principal } from '../../shared/auth/principal';
import type { PlannedRoute } from './route-planner';
import type { Decimal, MoneyLike } from '../../shared/money';

export type FinalMessage = Extract<BusMessage, { type: 'done' | 'failed' | 'cancelled' }>;

export interface Submission {
  id: string;
  /** The queue its job went to (cancelling removes it from there). */
  queue: QueueName;
  granted: Decimal;
  /** Messages from the worker (absent for background jobs). */
  mailbox?: Mailbox;
  /** Stop listening (call when the reply is sent or the client left). */
  detach(): void;
  /**
   * The request carries an Idempotency-Key: its generation outlives a wait that runs out (a repeat of the request
   * picks it up), instead of being cancelled.
   */
  keyed?: boolean;
  /** The generation of an earlier request with the same Idempotency-Key (nothing new was reserved). */
  replayed?: boolean;
  /**
   * A batch line parked for its endpoint's provider batch API (docs/batches.md "Provider batch APIs"): reserved and
   * recorded, no job of its own; a worker's chunk job sends it upstream.
   */
  parked?: boolean;
  /**
   * The generation's created_at, as its record and every read of it answer (a replay: the first request's); absent
   * for a request granted from a lease, whose record commits later (a route then takes its own clock).
   */
  createdAt?: Date;
  /**
   * The generation's record, committed: at once, except for a request granted from a lease, whose record commits while
   * its job runs, a stream's when it ends (STREAM_RECORD_WAIT_MS); asked, it is written now (a route that reads the
   * record back right away awaits it).
   */
  recorded?: () => Promise<unknown>;
}

/** Who asks: the caller, the request's trace id and its Idempotency-Key (docs/idempotency.md), as the guard left them. */
export interface Caller {
  principal: Principal;
  traceId: string;
  /** The request span (tracing on only): the job carries it, so the worker's spans join the request's trace. */
  traceparent?: string;
  idempotency?: IdempotentRequest;
  /** A batch line's batch (docs/batches.md): its line may go to its endpoint's provider batch API. */
  batchId?: string;
  /**
   * Reserve the whole bound or nothing (never a text request's output lowered to what fits): a batch line while lines of
   * its batch hold reservations, which it waits for instead (docs/batches.md "A batch never overspends").
   */
  wholeBound?: true;
}

/** The order fields a planned route gives: the serving model, the candidates in order, what was dropped, the plan's warnings. */
export function routed(route: PlannedRoute): Pick<GenerationOrder<GenerationJobBase>, 'primary' | 'candidates' | 'dropped' | 'warnings'> {
  return { primary: route.primary, candidates: route.candidates, dropped: route.plan.dropped, warnings: route.plan.warnings };
}

/** The fields of a job that `order` fills in for every kind. */
type CommonJobField = keyof Omit<GenerationJobBase, 'stickyKey'>;

/**
 * A generation to reserve, record and enqueue: the one description every kind (text, embeddings, typed questions,
 * images, media) gives the gateway. `order` builds both the generation record and its job from it.
 */
export interface GenerationOrder<T extends GenerationJobBase> {
  queue: QueueName;
  id: string;
  caller: Caller;
  requestType: RequestType;
  apiType: ApiType;
  mode: ResponseMode;
  /** The catalog model that serves it; `model` is what the record shows (default its id). */
  primary: { id: string; displayName: string };
  model?: string;
  /** What the caller sent, kept on the record (echo fields, conversations, history). */
  request: unknown;
  /** Endpoints to try, in order. */
  candidates: PlannedCandidate[];
  /** Candidates the plan dropped, kept on the record's routing. */
  dropped?: unknown;
  /** The record's routing names the queue (media: cancel and the reaper find the job there). */
  routingQueue?: boolean;
  /** Warnings for the worker (it adds those of the endpoint that answers), and those stored on the record at once. */
  warnings: string[];
  recordWarnings?: string[];
  bound: MoneyLike;
  minimum?: MoneyLike;
  callBackUrl?: string;
  sourceGenerationId?: string;
  previousResponseId?: string;
  /** Remove the job from Redis once it ends (its payload carries text the caller asked us not to keep: `store: false`). */
  forget?: boolean;
  /** False: a batch line that must run on the ordinary path (a text request with plugins, which run around the call). */
  upstreamBatch?: false;
  /** The job fields of this kind, once the reservation is known (text lowers max_output_tokens to what was granted). */
  job: (granted: Decimal) => Omit<T, CommonJobField>;
}

/** How long the API waits for a worker told to stop to settle its generation and report the cost (then it ends it itself, uncharged). */
export const STOP_GRACE_MS = 5_000;
