import type { JobsOptions } from 'bullmq';
import type { EmbeddingInput, TextRequest } from '../providers/provider.types';
import { QUEUES, type QueueName } from './queue-names';

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
}

export interface TextJobData extends GenerationJobBase {
  apiType: 'responses' | 'chat_completions' | 'systemone';
  mode: 'sync' | 'stream' | 'async';
  request: Omit<TextRequest, 'model'>;
  /** Request plugins run by the worker around the provider call (`masker`). */
  plugins?: string[];
  /** `store: false` (Responses API): the generation's record keeps no output text. */
  store?: false;
}

/** POST /v1/systemone: one job, one upstream call per question (concurrently), billed together. */
export interface SystemoneJobData extends GenerationJobBase {
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

/** Jobs by queue: attempts, back-off and retention in one table (STYLE habit 6). */
export const JOB_OPTIONS: Record<QueueName, JobsOptions> = {
  // Provider failures are handled inside the job (fallback to the next endpoint); a job re-runs only when its
  // worker died (stalled), and settlement is idempotent, so a re-run never charges twice.
  // A finished text or embeddings job is removed at once: its outcome is the generation's record in PostgreSQL,
  // nothing reads the job afterwards (the reaper treats a missing job like a finished one; its id is the
  // generation's, never added again), and keeping the last 1,000 cost BullMQ a ZADD, an HSET and the removal of
  // the oldest job (with all its keys) in every completion script — hot-path Redis work nobody read.
  [QUEUES.text]: { attempts: 1, removeOnComplete: true, removeOnFail: { age: 24 * 3600 } },
  [QUEUES.embeddings]: { attempts: 1, removeOnComplete: true, removeOnFail: { age: 24 * 3600 } },
  [QUEUES.image]: { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
  [QUEUES.media]: { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
  [QUEUES.callbacks]: { attempts: 8, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
  [QUEUES.maintenance]: { attempts: 3, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
};

/** Default concurrency per worker process and queue; override with WORKER_CONCURRENCY_<QUEUE>. */
export const DEFAULT_CONCURRENCY: Record<QueueName, number> = {
  text: 128,
  embeddings: 64,
  image: 16,
  media: 16,
  callbacks: 32,
  maintenance: 1,
};
