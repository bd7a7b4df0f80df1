/**
 * The contracts between the API and worker processes, per queue: what a job carries (its payload) and what the
 * worker answers when it completes (the `done` message on the generation bus, and the generation's `result`).
 * api/ and workers/ meet only here, in the database and on the queues: neither imports the other.
 *
 * | queue       | payload                             | result (bus `done` / generation.result)      |
 * |-------------|-------------------------------------|----------------------------------------------|
 * | text        | TextJobData, TypedQuestionsJobData  | TextDonePayload, TypedQuestionsDonePayload   |
 * | embeddings  | EmbeddingsJobData                   | EmbeddingsDonePayload                        |
 * | image       | MediaJobData (kind `image`)         | none: the record is read back                |
 * | media       | MediaJobData                        | none: the record is read back                |
 * | callbacks   | CallbackJobData                     | none                                         |
 * | maintenance | none (repeatable reaper job)        | none                                         |
 * | batches     | BatchJobData                        | none: the batch's record is the outcome      |
 * | upstream_batches | UpstreamBatchJobData           | none: each line's generation is the outcome  |
 *
 * A failure crosses as `StoredError` (shared/errors/app-error.ts: AppError.toStored / fromStored).
 */
import type { JobsOptions } from 'bullmq';
import type { EmbeddingInput, EmbeddingResult, TextRequest, TextResult, TokenUsage, UpstreamFailure } from '../providers/provider.types';
import type { ImageRequest, MediaInput } from '../providers/adapter.types';
import type { TypedAnswer } from '../formats/typed-questions.mapper';
import { QUEUES, type QueueName } from './queue-names';
import type { MediaKind } from '../formats/media.mapper';

/** One endpoint to try, in order, with the parameters it does not support (dropped with a warning). */
export interface PlannedCandidate {
  model: string;
  slug: string;
  dropParams: string[];
}

/** What every generation job carries, whatever its queue. */
export interface GenerationJobBase {
  generationId: string;
  organizationId: string;
  apiKeyId: string | null;
  userId: string | null;
  candidates: PlannedCandidate[];
  warnings: string[];
  /** Channel of the API process waiting for this job (sync and stream modes); null for background jobs. */
  replyTo: string | null;
  /** Stickiness key: the endpoint that answers is remembered under it. */
  stickyKey?: string;
  traceId?: string;
  /** The API's request span as a W3C traceparent, when tracing is on: the worker's spans join its trace (shared/telemetry). */
  traceparent?: string;
  /** The amount reserved (RUB, 10 places): a cost within it is charged exactly, so the reply may precede the commit. */
  reserved?: string;
  /**
   * Its money drawn from a lease by the process that claimed it, whose worker takes its record from that process's lane
   * (docs/architecture.md "Submitting"): any other run is an orphan (workers/services/drawn-jobs.ts).
   */
  drawn?: true;
  /**
   * A waiting client's job without an Idempotency-Key that its process tried to claim at enqueue: its answer can reach
   * only that client. When the claim took it (`claimedAtEnqueue`), a later run, after that process stopped or stood
   * still past the job's lock, is an orphan as a drawn job's is (workers/services/drawn-jobs.ts).
   */
  clientOnly?: true;
  /** The organization's cap on jobs running at once (`switchyard org update --max-concurrency`): see org-cap.ts. */
  maxConcurrency?: number;
}

export interface TextJobData extends GenerationJobBase {
  apiType: 'responses' | 'chat_completions' | 'systemone';
  mode: 'sync' | 'stream' | 'async' | 'batch';
  request: Omit<TextRequest, 'model'>;
  /** Request plugins run by the worker around the provider call (`masker`). */
  plugins?: string[];
  /** `store: false` (Responses API): the generation's record keeps no output text. */
  store?: false;
}

/** POST /v1/systemone: one job, one upstream call per question (concurrently), billed together. */
export interface TypedQuestionsJobData extends GenerationJobBase {
  apiType: 'systemone';
  mode: 'sync';
  questions: Array<{ name: string; type: 'noul' | 'choice' | 'score'; labels: string[]; request: Omit<TextRequest, 'model'> }>;
}

export interface EmbeddingsJobData extends GenerationJobBase {
  inputs: EmbeddingInput[];
  dimensions?: number;
  user?: string;
  /** Keep the vectors on the record (`result.replay`): the request has an Idempotency-Key, a repeat replays them. */
  keepResult?: boolean;
}

/** One upstream call that failed (or was not made), as recorded on the generation and in error metadata. */
export interface Attempt {
  provider: string;
  endpoint: string;
  reason: UpstreamFailure['reason'] | 'unavailable';
  status?: number;
  message: string;
  /** Typed-question jobs: the question the call was for (one endpoint may fail for several). */
  question?: string;
}

/** What the API process receives when a text generation completes. */
export interface TextDonePayload {
  result: TextResult;
  model: string;
  endpoint: string;
  provider: string;
  cost: string;
  warnings: string[];
  attempts: Attempt[];
  /** `usage.plugins` of the reply (interface: masker operations, latency, cost). */
  plugins?: Record<string, unknown>;
}

/** A failed upstream call, with the question it was for (the same endpoint may fail for several questions). */
export type QuestionAttempt = Attempt & { question: string };

/** What the API process receives (and the generation's `result`) when every question is answered. */
export interface TypedQuestionsDonePayload {
  /** Resolved model version: the provider's reported version, else the catalog model id. */
  model: string;
  answers: Record<string, TypedAnswer>;
  usage: TokenUsage;
  /** RUB decimal string: the sum over the questions. */
  cost: string;
  /** The endpoint that answered the most questions (the record's provider and final endpoint). */
  provider: string;
  endpoint: string;
  /** Question name → endpoint slug that answered it. */
  answeredBy: Record<string, string>;
  attempts: QuestionAttempt[];
}

/** What the API process receives when an embeddings generation completes. */
export interface EmbeddingsDonePayload {
  result: EmbeddingResult;
  model: string;
  endpoint: string;
  provider: string;
  cost: string;
  attempts: Attempt[];
}

// ---------- queues `image` and `media` ----------

/** What a generation produces: decides the job's queue, the shape of `data` and the polling hint. */
export type { MediaKind };

export interface MediaAttempt {
  provider: string;
  endpoint: string;
  reason: string;
  status?: number;
  message: string;
}

/** A file already stored for this generation (a resumed job does not store it twice). */
export interface SavedOutput {
  source: string;
  fileId: string;
  url: string;
  mimeType: string;
  size: number;
  /** Playing time read from the file's own headers (video and audio), when they say. */
  durationSeconds?: number;
}

/** Where a step job is: saved with `job.updateData`, so a retry resumes without a second upstream task. */
export interface MediaStep {
  phase: 'polling';
  /** Index of the candidate whose task runs. */
  candidate: number;
  taskId: string;
  polls: number;
  /** Consecutive failed polls (reset by a good one). */
  pollErrors: number;
  /** When the task was created (ms since epoch). */
  createdAt: number;
  attempts: MediaAttempt[];
  saved: SavedOutput[];
}

export interface MediaJobData extends GenerationJobBase {
  kind: MediaKind;
  /** Canonical media input for task adapters (Replicate); fields an endpoint does not support are in its `dropParams`. */
  input: MediaInput;
  /** For endpoints with an images operation (OpenAI): the image request, and whether the caller wants base64 back. */
  image?: { request: Omit<ImageRequest, 'model'>; responseFormat: 'url' | 'b64_json' };
  /** Input files or sources the request carries (usage `input_units`). */
  inputUnits: number;
  /** Seconds billed when the provider does not report a duration (video and audio). */
  expectedSeconds?: number;
  /** An upscale whose source is an image (billed per image, not per second). */
  sourceIsImage?: boolean;
  callBackUrl?: string | null;
  step?: MediaStep;
}

/** A callback delivery (queue `callbacks`). */
export interface CallbackJobData {
  generationId: string;
  organizationId: string;
  url: string;
  status: 'completed' | 'failed' | 'cancelled';
  /** When the first attempt signed the record's file URLs (ms): every retry sends the same body. */
  signedAt?: number;
  /** The generation's request span (tracing on): each delivery attempt is a span under it. */
  traceparent?: string;
}

/** A batch's driver (queue `batches`, api/services/batch-driver.ts): its state is the batch's row, not the job. */
export interface BatchJobData {
  batchId: string;
  organizationId: string;
  traceId?: string;
  /** The driver's wait between steps when its last run ended (api/services/batch-driver.ts `run`): the next run goes on from it. */
  waitMs?: number;
}

/**
 * A chunk of a batch's parked lines at a provider's own batch API (queue `upstream_batches`,
 * workers/services/upstream-batch-runner.ts): its state is the `upstream_batches` row, not the job.
 */
export interface UpstreamBatchJobData {
  upstreamBatchId: string;
  batchId: string;
  organizationId: string;
  traceId?: string;
}

/** Payload and result of each queue (see the table at the top). */
export interface JobContracts {
  [QUEUES.text]: { data: TextJobData | TypedQuestionsJobData; result: TextDonePayload | TypedQuestionsDonePayload };
  [QUEUES.embeddings]: { data: EmbeddingsJobData; result: EmbeddingsDonePayload };
  [QUEUES.image]: { data: MediaJobData; result: void };
  [QUEUES.media]: { data: MediaJobData; result: void };
  [QUEUES.callbacks]: { data: CallbackJobData; result: void };
  [QUEUES.maintenance]: { data: Record<string, never>; result: void };
  [QUEUES.batches]: { data: BatchJobData; result: void };
  [QUEUES.upstreamBatches]: { data: UpstreamBatchJobData; result: void };
}
export type JobDataOf<Q extends QueueName> = JobContracts[Q]['data'];
export type JobResultOf<Q extends QueueName> = JobContracts[Q]['result'];

/**
 * The queue a generation's job lives in: the one it was submitted to (`routing.queue`, written at submission),
 * else worked out from its kind for records written before the queue was remembered.
 */
export function queueOfGeneration(g: { apiType: string; requestType: string; routing: unknown }): QueueName {
  const remembered = (g.routing as { queue?: QueueName } | null)?.queue;
  if (remembered) return remembered;
  if (g.apiType === 'embeddings') return QUEUES.embeddings;
  if (g.apiType === 'images') return QUEUES.image;
  if (g.apiType === 'media') return g.requestType === 'image' ? QUEUES.image : QUEUES.media;
  return QUEUES.text;
}

/**
 * What the queue dashboard (/admin/queues) shows of the text and embeddings queues, most of the traffic: their jobs of
 * the last hour, at most the last 100 completed (the outcome is the generation's record in PostgreSQL; the job is the
 * operator's view of recent work). Small on purpose: a kept job holds its payload in Redis (a request body, up to
 * 10 MiB), and a completion that keeps it costs BullMQ a ZADD and an HSET, and the removal of the oldest kept job
 * (bench/README.md, "Redis work per request": about 3 commands and 11 % of Redis time per request).
 */
const RECENT_COMPLETED = { age: 3600, count: 100 };
/** Failed jobs, kept a day for a post-mortem, at most the last 1,000 per queue. */
const RECENT_FAILED = { age: 24 * 3600, count: 1000 };

/** Jobs by queue: attempts, back-off and retention in one table (STYLE habit 6). */
export const JOB_OPTIONS: Record<QueueName, JobsOptions> = {
  // Provider failures are handled inside the job (fallback to the next endpoint); a job re-runs only when its
  // worker died (stalled), and settlement is idempotent, so a re-run never charges twice. A job whose generation
  // failed still completes (the failure is the record's); the failed set holds jobs that threw. Nothing but the
  // dashboard reads a finished job (the reaper treats a missing one like a finished one; its id is the
  // generation's, never added again); `store: false` requests keep none (GenerationGateway `forget`).
  [QUEUES.text]: { attempts: 1, removeOnComplete: RECENT_COMPLETED, removeOnFail: RECENT_FAILED },
  [QUEUES.embeddings]: { attempts: 1, removeOnComplete: RECENT_COMPLETED, removeOnFail: RECENT_FAILED },
  [QUEUES.image]: { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
  [QUEUES.media]: { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
  [QUEUES.callbacks]: { attempts: 8, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
  [QUEUES.maintenance]: { attempts: 3, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
  // A driver step that throws is retried with back-off; its state is in PostgreSQL, so a retry resumes.
  [QUEUES.batches]: { attempts: 20, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
  // A chunk's step that throws (its provider or PostgreSQL away) is retried with back-off; its state is its row.
  [QUEUES.upstreamBatches]: { attempts: 20, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
};

/**
 * Queues whose jobs run once (a re-run only when the worker died), claimed at enqueue for a waiting client and drawn from
 * leases (docs/architecture.md "Submitting"). Image and media jobs run in steps and retry; their latency is the
 * provider's, so they reserve first and go through the queue.
 */
export const AT_ONCE_QUEUES: ReadonlySet<QueueName> = new Set([QUEUES.text, QUEUES.embeddings]);

/**
 * Queues whose jobs run in steps (MediaExecutor: a task created upstream, then polled in later runs of the job): between
 * two steps a job may hold an upstream task that only its run can cancel, so a cancel never removes one
 * (api/services/generation-gateway.ts `cancel`).
 */
export const STEP_QUEUES: ReadonlySet<QueueName> = new Set([QUEUES.image, QUEUES.media]);

/** Default concurrency per worker process and queue; override with WORKER_CONCURRENCY_<QUEUE>. */
export const DEFAULT_CONCURRENCY: Record<QueueName, number> = {
  text: 128,
  embeddings: 64,
  image: 16,
  media: 16,
  callbacks: 32,
  maintenance: 1,
  batches: 8,
  upstream_batches: 8,
};
