import { endpointBySlug, type ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import { money, moneyString } from '../../shared/money';
import { AppError } from '../../shared/errors/app-error';
import { mediaCost, mediaData, producedUnits, type MediaOutput, type MediaResult, type MediaUsage } from '../../shared/formats/media.mapper';
import type { UpstreamFailure } from '../../shared/providers/provider.types';
import { ignoredParameterWarnings } from '../../shared/routing/route-parameters';
import { GenerationPublisher, type GenerationEvent } from '../../shared/queue/generation-bus';
import type { MediaAttempt, MediaJobData, MediaStep, PlannedCandidate } from '../../shared/queue/job-catalog';
import type { CallbackService } from '../../shared/services/callbacks.service';
import type { WorkerDeps } from '../worker-deps';
import { attemptOf, failedAttempt } from './attempt-failures';
import { generationById } from '../../shared/db/generation-reads';
import { endGeneration, type Settled } from '../../shared/billing/ending';
import type { Finish } from '../../shared/billing/ledger';

interface Completion {
  candidate: PlannedCandidate;
  resolved: ResolvedEndpoint;
  outputs: MediaOutput[];
  attempts: MediaAttempt[];
  seconds?: number;
  tokens?: { input: number; output: number };
  taskId?: string;
  content?: string;
  /** What the endpoint's request could not carry, beyond the plan's dropped parameters. */
  warnings?: string[];
}

/**
 * How a media generation ends (MediaExecutor's steps end it here): completed, with the money settled once; failed;
 * or cancelled by the provider. Each ending removes the stored files its outcome does not keep, queues the
 * callback and tells the waiting API.
 */
export class MediaEndings {
  /** `callbacks`: where finished generations with a `callBackUrl` are queued. */
  constructor(
    private readonly deps: WorkerDeps,
    private readonly callbacks: CallbackService,
  ) {}

  /** Settles the money once and records the result; tells the waiting API; queues the callback. */
  async complete(data: MediaJobData, c: Completion): Promise<void> {
    const prompt = typeof data.input.prompt === 'string' ? data.input.prompt : data.image?.request.prompt;
    const units = producedUnits(data.kind, c.outputs, { seconds: c.seconds, prompt, sourceIsImage: data.sourceIsImage });
    // usage × price, within the reservation (an upper bound: the endpoint's longest output). A provider that
    // still went beyond it is charged the bound; the rest is recorded for operators, never taken silently.
    const priced = mediaCost(c.resolved.endpoint.price, units);
    const reserved = data.reserved === undefined ? undefined : money(data.reserved);
    const overrun = reserved !== undefined && priced.greaterThan(reserved) ? priced.minus(reserved) : undefined;
    const cost = overrun ? reserved! : priced;
    const usage: MediaUsage = { input_units: data.inputUnits, output_units: c.outputs.length };
    if (c.seconds !== undefined) usage.duration_seconds = c.seconds;
    if (c.tokens) Object.assign(usage, { input_tokens: c.tokens.input, output_tokens: c.tokens.output, total_tokens: c.tokens.input + c.tokens.output });
    const result: MediaResult = {
      ...(c.outputs.length > 0 && { data: mediaData(c.outputs) }),
      outputs: c.outputs,
      provider: c.resolved.provider.id,
      endpoint: c.candidate.slug,
      ...(c.taskId !== undefined && { taskId: c.taskId }),
      ...(c.content !== undefined && { content: c.content }),
    };
    const warnings = [...data.warnings, ...ignoredParameterWarnings(c.candidate.dropParams, c.candidate.model, c.resolved.provider.id), ...(c.warnings ?? [])];
    const finish: Finish = {
      status: 'completed',
      cost,
      result,
      usage,
      warnings,
      model: c.candidate.model,
      provider: c.resolved.provider.id,
      finalEndpointSlug: c.candidate.slug,
      finishReason: 'stop',
      attemptsCount: c.attempts.length + 1,
      generationTimeMs: await this.elapsed(data.generationId),
      upstreamId: c.taskId ?? null,
      routing: {
        attempts: c.attempts,
        answeredBy: c.candidate.slug,
        ...(overrun && {
          overrun: {
            uncharged_rub: moneyString(overrun),
            priced_rub: moneyString(priced),
            charged_rub: moneyString(cost),
            ...(c.seconds !== undefined && { duration_seconds: c.seconds }),
            ...(c.resolved.endpoint.maxDurationSeconds !== undefined && { max_duration_seconds: c.resolved.endpoint.maxDurationSeconds }),
          },
        }),
      },
    };
    this.deps.stats.record(c.candidate.slug, { ok: true, at: Date.now() });
    this.deps.metrics.providerAttempts.inc({ provider: c.resolved.provider.id, outcome: 'ok' });
    const committed = async (outcome: Settled) => {
      if (overrun && outcome.applied) {
        this.deps.metrics.mediaUncharged.inc({ provider: c.resolved.provider.id }, overrun);
        this.deps.logger.warn('media output beyond the reserved bound: charged the bound', {
          generationId: data.generationId,
          endpoint: c.candidate.slug,
          seconds: c.seconds,
          uncharged_rub: moneyString(overrun),
          trace_id: data.traceId,
        });
      }
      // Storing and settling are one decision: a generation cancelled while its output was being stored ends
      // cancelled and free, and the files this run stored go (the cancel route removes those it found).
      if (!outcome.applied) await this.discardUnkept(data);
      // The callback is queued before anything else can fail: a re-run after this point finds the ending and queues
      // it again (deduped), never loses it.
      if (outcome.applied) await this.callback(data, 'completed');
    };
    const reply = (o: Settled): GenerationEvent => (o.applied ? { type: 'done', payload: { id: data.generationId } } : { type: 'cancelled' });
    await endGeneration(this.deps, this.publisher(data), data, { kind: 'end', finish, committed, reply });
  }

  failTask(data: MediaJobData, step: MediaStep, f: Pick<UpstreamFailure, 'reason' | 'message' | 'status' | 'raw'>): Promise<void> {
    const candidate = data.candidates[step.candidate];
    const provider = endpointBySlug(this.deps.catalog, candidate.slug)?.provider.id ?? candidate.slug;
    const attempts = [...step.attempts, attemptOf(provider, candidate.slug, f) as MediaAttempt];
    failedAttempt(this.deps, candidate.slug, provider, f);
    const reason = f.reason === 'upstream_timeout' ? 'upstream_timeout' : 'provider_error';
    const err = AppError.fromReason(reason, f.message, { raw: f.raw ?? f.message, provider_name: provider, attempts });
    return this.fail(data, err, attempts);
  }

  /** Ends the generation as failed (nothing charged). */
  async fail(data: MediaJobData, err: AppError, attempts: MediaAttempt[]): Promise<void> {
    const error = err.toStored();
    const finish: Finish = { status: 'failed', error, routing: { attempts }, attemptsCount: attempts.length, generationTimeMs: await this.elapsed(data.generationId) };
    await endGeneration(this.deps, this.publisher(data), data, { kind: 'end', finish, committed: (o) => this.ended(data, 'failed', o), reply: (o) => (o.applied ? { type: 'failed', error } : { type: 'cancelled' }) });
  }

  /** The provider cancelled the task on its side. */
  async endCancelled(data: MediaJobData): Promise<void> {
    await endGeneration(this.deps, this.publisher(data), data, { kind: 'end', finish: { status: 'cancelled' }, committed: (o) => this.ended(data, 'cancelled', o), reply: () => ({ type: 'cancelled' }) });
  }

  /** A generation that did not complete: its callback when this ending was its own, and its stored files gone. */
  private async ended(data: MediaJobData, status: 'failed' | 'cancelled', o: Settled): Promise<void> {
    if (o.applied) await this.callback(data, status);
    await this.discardUnkept(data);
  }

  /** Removes the stored files the generation's outcome does not keep (all of them unless it completed). */
  async discardUnkept(data: MediaJobData): Promise<void> {
    const n = await this.deps.files.discardUnkept(data.generationId);
    if (n > 0) this.deps.logger.info('discarded the output of a generation that did not complete', { generationId: data.generationId, files: n, trace_id: data.traceId });
  }

  async callback(data: MediaJobData, status: 'completed' | 'failed' | 'cancelled'): Promise<void> {
    if (!data.callBackUrl) return;
    await this.callbacks.enqueue({ generationId: data.generationId, organizationId: data.organizationId, url: data.callBackUrl, status, ...(data.traceparent && { traceparent: data.traceparent }) });
  }

  private async elapsed(id: string): Promise<number | null> {
    const g = await generationById(this.deps.db, id, (where) => this.deps.db.generation.findFirst({ where, select: { startedAt: true } }));
    return g?.startedAt ? Math.max(0, this.deps.clock().getTime() - g.startedAt.getTime()) : null;
  }

  publisher(data: MediaJobData): GenerationPublisher {
    return new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId, this.deps.lane.buses);
  }
}
