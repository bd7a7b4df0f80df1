/**
 * What a fake provider keeps between requests (fake-provider.ts holds one SharedState; the wire formats read and
 * write it through their request's Ctx): Replicate predictions, OpenAI files and batches, Anthropic message batches.
 */
import type { FakeKnobs } from './fake-knobs';
import type { RequestChecker } from './request-check';

type Json = Record<string, unknown>;

/** State that outlives one request (Replicate predictions, OpenAI files and batches, Anthropic message batches). */
export interface SharedState {
  predictions: Map<string, Prediction>;
  /** Every `POST /predictions/{id}/cancel` received: the prediction and its status when the cancel came. */
  cancels: Array<{ id: string; status: string; at: Date }>;
  openaiFiles: Map<string, OpenAIFile>;
  openaiBatches: Map<string, OpenAIBatch>;
  anthropicBatches: Map<string, AnthropicBatch>;
  batchStats: BatchStats;
  /** Judges each request by its provider's own definition (request-check.ts). */
  checker: RequestChecker;
}

/** Replicate's prediction kinds and statuses (replicate.ts). */
export type Kind = 'image' | 'video' | 'audio' | 'text';
export type Status = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';

/** A Replicate prediction (replicate.ts). */
export interface Prediction {
  id: string;
  model: string;
  version: string;
  input: Json;
  kind: Kind;
  ext: string;
  status: Status;
  polls: number;
  knobs: FakeKnobs;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
  logs: string;
  output: unknown;
  error: string | null;
  metrics: Json;
}

export interface OpenAIFile {
  id: string;
  filename: string;
  purpose: string;
  createdAt: number;
  content: string;
}

/** OpenAI's batch statuses and lines (openai-batches.ts). */
type OpenAIBatchStatus = 'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';
export interface OpenAIBatchLine {
  customId: string;
  path: string;
  body: unknown;
  reply?: LineReply;
  requestId?: string;
}
export interface OpenAIBatch extends BatchClock {
  id: string;
  endpoint: string;
  inputFileId: string;
  metadata: unknown;
  status: OpenAIBatchStatus;
  lines: OpenAIBatchLine[];
  /** Why validation failed the batch (`errors.data`), decided at creation, shown once validating is over. */
  invalid: Json[];
  outputFileId?: string;
  errorFileId?: string;
  at: Partial<Record<'in_progress' | 'finalizing' | 'completed' | 'failed' | 'expired' | 'cancelling' | 'cancelled', number>>;
  busy: Promise<void>;
}

/** Anthropic's message batches and their lines (anthropic-batches.ts). */
export interface AnthropicBatchLine {
  customId: string;
  params: unknown;
  reply?: LineReply;
}
export interface AnthropicBatch extends BatchClock {
  id: string;
  lines: AnthropicBatchLine[];
  status: 'in_progress' | 'canceling' | 'ended';
  endedAt?: number;
  busy: Promise<void>;
}

/** What one line's synchronous call answered: its status and its JSON body. */
export interface LineReply {
  status: number;
  body: unknown;
}

/** Counters of the fakes' batch APIs, both formats together (`fake.batchStats`, `GET /_fake/batches`). */
export interface BatchStats {
  /** Batches created (OpenAI `POST /batches` accepted, Anthropic `POST /messages/batches` accepted). */
  created: number;
  /** Lines answered by a synchronous handler (a line failed by a marker counts too: it "ran" and failed). */
  linesRun: number;
  /** Cancels received for a batch that was still running. */
  cancels: number;
  /** OpenAI files uploaded (`POST /files`). */
  uploads: number;
}

/** A batch's clock: its creation, its `batchMs`, and when a cancel came. */
export interface BatchClock {
  createdAt: number;
  knobs: FakeKnobs;
  cancelledAt?: number;
}

