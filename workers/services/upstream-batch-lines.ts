/**
 * One parked batch line at its provider's batch API (docs/batches.md "Provider batch APIs"): the provider request it
 * is sent as, and its ending once the provider's result is read. The record and the money are what an ordinary job of
 * its kind writes (text-executor.ts, embeddings-executor.ts), at the endpoint's `batch` prices, settled through the
 * same path (shared/billing/ending.ts endGeneration, here with nobody waiting).
 */
import type { Queue } from 'bullmq';
import type { ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import type { ProviderAdapter, UpstreamBatchLine } from '../../shared/providers/adapter.types';
import type { UpstreamFailure } from '../../shared/providers/provider.types';
import { tokenCost } from '../../shared/billing/pricing';
import { requestWithout } from '../../shared/formats/format-utils';
import { askedTier } from '../../shared/catalog/catalog-index';
import { leftOutWarning } from '../../shared/providers/mapper-utils';
import { ignoredParameterWarnings } from '../../shared/routing/route-parameters';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import { addJob } from '../../shared/queue/claims';
import { workClassOf } from '../../shared/queue/fairness';
import { JOB_OPTIONS, type EmbeddingsJobData, type TextDonePayload, type TextJobData, type EmbeddingsDonePayload } from '../../shared/queue/job-catalog';
import type { QueueName } from '../../shared/queue/queue-names';
import type { WorkerDeps } from '../worker-deps';
import { endFailed } from './attempt-loop';
import { endGeneration } from '../../shared/billing/ending';
import { attemptOf, failedAttempt, failureError } from './attempt-failures';
import { embeddingRequest } from './embeddings-executor';
import { recorded, textMappingOptions } from './text-executor';

/** A parked line as its chunk job reads it: its generation, its ordinary job's queue and payload. */
export interface ParkedJob {
  generationId: string;
  queue: string;
  job: unknown;
}

/** What every line of a chunk shares: its endpoint, the adapter, and when the chunk went upstream. */
export interface ChunkCall {
  resolved: ResolvedEndpoint;
  adapter: ProviderAdapter;
  submittedAt: number;
}

const isText = (l: ParkedJob): boolean => l.queue === 'text';

/** The request an ordinary job of the line would send to the chunk's endpoint, never streamed. */
export function upstreamLine(l: ParkedJob, c: ChunkCall): UpstreamBatchLine {
  const key = c.resolved.provider.apiKey ?? '';
  const upstreamModel = c.resolved.endpoint.upstreamModel;
  if (isText(l)) {
    const data = l.job as TextJobData;
    // A batch API processes its lines at its own tier and price (the endpoint's `batch` prices): a line's service_tier is
    // left out, with a warning when it asked for another tier than standard.
    const { serviceTier, ...req } = { ...requestWithout(data.request, upstreamModel, data.candidates[0]?.dropParams ?? []), stream: false };
    // No timeout: a batch line is not waited for, so it gets the endpoint's whole output limit. A Responses API line goes
    // to an endpoint that speaks that API as one, as its direct call would: a chunk holds the lines of one batch, whose
    // lines share one url, so a provider batch (which runs one url) gets lines of one API.
    const options = { ...textMappingOptions(c.resolved, data.apiType), timeoutMs: undefined };
    const request = c.adapter.text!.buildRequest(req, key, options);
    const tier = askedTier(serviceTier);
    if (tier !== undefined) request.warnings = [...(request.warnings ?? []), leftOutWarning(`service_tier ${JSON.stringify(tier)}`, upstreamModel, `a line of ${c.resolved.provider.id}'s batch API is processed and charged at the batch price`)];
    return { customId: l.generationId, request };
  }
  return { customId: l.generationId, request: c.adapter.embeddings!.buildRequest(embeddingRequest(l.job as EmbeddingsJobData, upstreamModel), key) };
}

/**
 * Ends a line with its provider's reply body, charged at the endpoint's batch prices. A body that cannot be read
 * (or embeddings of the wrong count) is a failure the line may be retried for: that failure, else null.
 */
export async function settleLine(deps: WorkerDeps, l: ParkedJob, c: ChunkCall, body: unknown): Promise<UpstreamFailure | null> {
  const { resolved } = c;
  const price = resolved.endpoint.batch?.price ?? resolved.endpoint.price;
  const candidate = (l.job as TextJobData).candidates[0]!;
  const pub = new GenerationPublisher(deps.redis, null, l.generationId, deps.lane.buses);
  const now = Date.now();
  const timing = { latencyMs: now - c.submittedAt, queueTimeMs: null, generationTimeMs: now - c.submittedAt, attemptsCount: 1 };
  const common = { model: candidate.model, provider: resolved.provider.id, finalEndpointSlug: candidate.slug, routing: { attempts: [], answeredBy: candidate.slug, upstreamBatch: candidate.slug }, ...timing };
  let parsed;
  try {
    parsed = isText(l) ? { text: c.adapter.text!.parseResponse(body) } : { embeddings: c.adapter.embeddings!.parseResponse(body, embeddingRequest(l.job as EmbeddingsJobData, resolved.endpoint.upstreamModel)) };
  } catch (e) {
    return { reason: 'malformed_reply', message: `unreadable batch result: ${(e as Error).message}`, fallback: true };
  }
  if (parsed.text) {
    const data = l.job as TextJobData;
    const result = parsed.text;
    const cost = tokenCost(price, result.usage);
    // The request is described again (pure) for what it could not carry as asked: the line's warnings.
    const sent = upstreamLine(l, c).request.warnings ?? [];
    const warnings = [...data.warnings, ...ignoredParameterWarnings(candidate.dropParams, candidate.model, resolved.provider.id), ...sent];
    const payload: TextDonePayload = { result, model: candidate.model, endpoint: candidate.slug, provider: resolved.provider.id, cost: cost.toFixed(10), warnings, attempts: [] };
    await endGeneration(deps, pub, { ...data, replyTo: null }, { kind: 'answer', finish: { status: 'completed', cost, result: recorded(data, payload), usage: result.usage, warnings, finishReason: result.finishReason, upstreamId: result.upstreamId ?? null, ...common }, payload });
    return null;
  }
  const data = l.job as EmbeddingsJobData;
  const result = parsed.embeddings!;
  if (result.vectors.length !== data.inputs.length) return { reason: 'malformed_reply', message: `expected ${data.inputs.length} vectors, got ${result.vectors.length}`, fallback: true };
  const usage = { inputTokens: result.usage.inputTokens, outputTokens: 0 };
  const cost = tokenCost(price, usage);
  const payload: EmbeddingsDonePayload = { result, model: candidate.model, endpoint: candidate.slug, provider: resolved.provider.id, cost: cost.toFixed(10), attempts: [] };
  const record = { model: candidate.model, endpoint: candidate.slug, count: result.vectors.length, dimensions: result.vectors[0]?.length ?? 0, ...(data.keepResult && { replay: payload }) };
  await endGeneration(deps, pub, { ...data, replyTo: null }, { kind: 'answer', finish: { status: 'completed', cost, usage, result: record, finishReason: 'stop', ...common }, payload });
  return null;
}

/** A line the provider refused for good (a 4xx): it fails as its ordinary job would have, nothing charged. */
export async function failLine(deps: WorkerDeps, l: ParkedJob, c: ChunkCall, failure: UpstreamFailure): Promise<void> {
  const slug = (l.job as TextJobData).candidates[0]?.slug ?? '';
  const attempts = [attemptOf(c.resolved.provider.id, slug, failure)];
  failedAttempt(deps, slug, c.resolved.provider.id, failure);
  const pub = new GenerationPublisher(deps.redis, null, l.generationId, deps.lane.buses);
  await endFailed(deps, pub, l.job as TextJobData, failureError(deps, attempts, failure), attempts, { queueTimeMs: 0, startedAt: c.submittedAt });
}

/**
 * A line the provider did not answer (a 5xx, 429, its batch failed, expired or left the line out): its ordinary job
 * runs it now, the normal path (routing and fallbacks at the regular prices, within its reservation). Only while its
 * generation still runs; the job's id is the generation's, so it is never added twice.
 */
export async function fallBack(deps: Pick<WorkerDeps, 'logger'>, queues: Record<'text' | 'embeddings', Queue>, l: ParkedJob, why: string): Promise<void> {
  const data = l.job as TextJobData | EmbeddingsJobData;
  const queue = (isText(l) ? 'text' : 'embeddings') as QueueName & ('text' | 'embeddings');
  deps.logger.info('a batch line falls back from its provider batch to an ordinary job', { generationId: l.generationId, why, trace_id: data.traceId });
  await addJob(queues[queue], data, { ...JOB_OPTIONS[queue], jobId: l.generationId }, undefined, { organizationId: data.organizationId, workClass: workClassOf('batch') });
}

/** A failure as the contract reports it, for the attempt recorded and the error mapped. */
export function failureOf(r: { status?: number; message: string; retryable: boolean }): UpstreamFailure {
  if (r.retryable) return { reason: r.status === 429 ? 'rate_limited' : 'provider_error', status: r.status, message: r.message, fallback: true };
  return { reason: r.status === 401 || r.status === 403 ? 'unauthorized' : 'bad_request', status: r.status, message: r.message, fallback: false };
}
