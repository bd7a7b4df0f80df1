import { endpointBySlug, type ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import { money, moneyString } from '../../shared/money';
import { AppError } from '../../shared/errors/app-error';
import { mediaCost, mediaData, producedUnits, type MediaOutput, type MediaResult, type MediaUsage } from '../../shared/formats/media.mapper';
import type { UpstreamFailure } from '../../shared/providers/provider.types';
import { ignoredParameterWarnings } from '../../shared/routing/route-parameters';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { MediaAttempt, MediaJobData, MediaStep, PlannedCandidate } from '../../shared/queue/job-catalog';
import type { CallbackService } from '../../shared/services/callbacks.service';
import type { WorkerDeps } from '../worker-deps';
import { attemptOf, failedAttempt } from './attempt-failures';
import { tracedSettlement, type SettledReport } from './job-spans';

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
  complete(data: MediaJobData, c: Completion): Promise<void> {
    return tracedSettlement(this.deps.tracing, data, 'completed', () => this.settleCompletion(data, c));
  }

  /** complete's work; resolves to what was charged ('0' when another ending came first) and the usage recorded. */
  private async settleCompletion(data: MediaJobData, c: Completion): Promise<SettledReport> {
    const prompt = typeof data.input.prompt === 'string' ? data.input.prompt : data.image?.request.prompt;
    const units = producedUnits(data.kind, c.outputs, { seconds: c.seconds, prompt, sourceIsImage: data.sourceIsImage });
    // usage × price, within the reservation (an upper bound: the endpoint's longest output). A provider that
    // still went beyond it is charged the bound; the rest is recorded for operators, never taken silently.
    const priced = mediaCost(c.resolved.endpoint.price, units);
    const reserved = await this.reservedAmount(data.generationId);
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
    const outcome = await this.deps.generations.finish(data.generationId, {
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
    });
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
    this.deps.stats.record(c.candidate.slug, { ok: true, at: Date.now() });
    this.deps.metrics.providerAttempts.inc({ provider: c.resolved.provider.id, outcome: 'ok' });
    // Storing and settling are one decision: a generation cancelled while its output was being stored ends
    // cancelled and free, and the files this run stored go (the cancel route removes those it found).
    if (!outcome.applied) await this.discardUnkept(data);
    // The callback is queued before anything else can fail: a re-run after this point finds the ending and queues
    // it again (deduped), never loses it.
    if (outcome.applied) await this.callback(data, 'completed');
    await this.publisher(data).send(outcome.applied ? { type: 'done', payload: { id: data.generationId } } : { type: 'cancelled' });
    return { cost: outcome.applied ? moneyString(cost) : '0', usage };
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
  fail(data: MediaJobData, err: AppError, attempts: MediaAttempt[]): Promise<void> {
    const error = err.toStored();
    return tracedSettlement(this.deps.tracing, data, 'failed', async () => {
      const outcome = await this.deps.generations.finish(data.generationId, { status: 'failed', error, routing: { attempts }, attemptsCount: attempts.length, generationTimeMs: await this.elapsed(data.generationId) });
      if (outcome.applied) await this.callback(data, 'failed');
      await this.discardUnkept(data);
      await this.publisher(data).send(outcome.applied ? { type: 'failed', error } : { type: 'cancelled' });
    }, { code: error.code, message: error.message });
  }

  /** The provider cancelled the task on its side. */
  endCancelled(data: MediaJobData): Promise<void> {
    return tracedSettlement(this.deps.tracing, data, 'cancelled', async () => {
      const outcome = await this.deps.generations.finish(data.generationId, { status: 'cancelled' });
      if (outcome.applied) await this.callback(data, 'cancelled');
      await this.discardUnkept(data);
      await this.publisher(data).send({ type: 'cancelled' });
    });
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

  /** What the generation reserved (its cost's upper bound); undefined for a record without one. */
  private async reservedAmount(id: string) {
    const g = await this.deps.db.generation.findUnique({ where: { id }, select: { reservedAmount: true } });
    return g ? money(g.reservedAmount.toString()) : undefined;
  }

  private async elapsed(id: string): Promise<number | null> {
    const g = await this.deps.db.generation.findUnique({ where: { id }, select: { startedAt: true } });
    return g?.startedAt ? Math.max(0, this.deps.clock().getTime() - g.startedAt.getTime()) : null;
  }

  publisher(data: MediaJobData): GenerationPublisher {
    return new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId, this.deps.lane.buses);
  }
}
