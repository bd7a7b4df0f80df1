import { DelayedError, Queue, UnrecoverableError, type Job } from 'bullmq';
import { endpointBySlug, type ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import { AppError } from '../../shared/errors/app-error';
import { imageRequestToMediaInput, type MediaOutput } from '../../shared/formats/media.mapper';
import type { MediaInput, MediaTask, ProviderAdapter } from '../../shared/providers/adapter.types';
import type { HttpRequestSpec } from '../../shared/providers/provider.types';
import { adapterByKind } from '../../shared/providers/registry';
import { isUpstreamError } from '../../shared/providers/upstream-error';
import type { PlannedCandidate, MediaAttempt, MediaJobData, MediaStep } from '../../shared/queue/job-catalog';
import { QUEUES } from '../../shared/queue/queue-names';
import { CallbackService } from '../../shared/services/callbacks.service';
import type { WorkerDeps } from '../worker-deps';
import type { MediaSettings } from '../../shared/config/env';
import { runAttempts, upstreamRequest, type EndpointCall } from './attempt-loop';
import { failureError } from './attempt-failures';
import { ImageExecutor, type ImagesCallResult } from './image-executor';
import { OutputStore } from './output-store';
import { MediaEndings } from './media-endings';
import { pollSpan } from './job-spans';
import { generationById, generationKey } from '../../shared/db/generation-reads';

/** The MEDIA_* settings (Config.media, shared/config/env.ts) and a test seam for downloads. */
export interface MediaExecutorOptions extends MediaSettings {
  fetch?: typeof fetch;
}

/**
 * Runs image and media generations (queues `image` and `media`) as STEP jobs (BullMQ's documented pattern):
 *
 *   start   → markProcessing; try each planned endpoint: an `images` operation answers at once (OpenAI), a
 *             `media` operation creates an upstream task (Replicate) whose id is saved with job.updateData
 *   polling → the job re-schedules itself with job.moveToDelayed + DelayedError (growing back-off): no worker
 *             sleeps; each run reads the task once
 *   done    → outputs downloaded into our storage (each saved file recorded in the step, so a retry does not
 *             store it twice), the money settled once, the waiting API told, the callback queued (the endings:
 *             media-endings.ts)
 *
 * A retry after a crash resumes at the saved step, polling the same task instead of creating a second one.
 * A generation cancelled meanwhile is seen by its stop message (a long call is aborted) or at the next step: the
 * upstream task is cancelled and the job ends.
 */
export class MediaExecutor {
  private readonly images: ImageExecutor;
  private readonly store: OutputStore;
  private readonly endings: MediaEndings;
  /** The callbacks queue this executor opened itself (none given): closed by close(). */
  private readonly ownQueue?: Queue;

  /** `callbacks`: where finished generations with a `callBackUrl` are queued (the worker pool's, closed with it). */
  constructor(
    private readonly deps: WorkerDeps,
    private readonly opts: MediaExecutorOptions,
    callbacks?: CallbackService,
  ) {
    this.store = new OutputStore(deps, { fetch: opts.fetch ?? globalThis.fetch, downloadTimeoutMs: opts.downloadTimeoutMs });
    this.images = new ImageExecutor(deps, this.store);
    if (!callbacks) this.ownQueue = new Queue(QUEUES.callbacks, { connection: deps.redis, prefix: deps.config.queuePrefix });
    this.endings = new MediaEndings(deps, callbacks ?? new CallbackService(this.ownQueue!, { backoffMs: opts.callbackBackoffMs }));
  }

  async close(): Promise<void> {
    await this.ownQueue?.close();
  }

  async run(job: Job<MediaJobData>, token?: string): Promise<void> {
    // Taken before the step reads the generation: a cancel committed after that read reaches this run by its stop.
    const stop = this.deps.stops.start(job.data.generationId);
    try {
      await this.step(job, token);
    } catch (e) {
      if (e instanceof DelayedError) throw e;
      // A call aborted because the generation was cancelled (or any failure after a cancel): the cancel stands.
      if (await this.endIfCancelled(job.data).catch(() => false)) return;
      // The last attempt ends the generation (free), so no reservation is left held by a dead job.
      const last = e instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      this.deps.logger.warn('media job step failed', { generationId: job.data.generationId, err: e, last, trace_id: job.data.traceId });
      if (last) {
        const err = new AppError('INTERNAL_ERROR', 'The generation could not be completed');
        await this.endings.fail(job.data, err, job.data.step?.attempts ?? []).catch(() => undefined);
      }
      throw e;
    } finally {
      this.deps.stops.end(job.data.generationId, stop);
    }
  }

  private async step(job: Job<MediaJobData>, token?: string): Promise<void> {
    const data = job.data;
    const gen = await generationById(this.deps.db, data.generationId, (where) => this.deps.db.generation.findFirst({ where, select: { status: true } }));
    if (!gen) return;
    if (gen.status === 'completed' || gen.status === 'failed' || gen.status === 'cancelled') {
      // A run that stored files and died before settling: the outcome decides what stays (cancelled: nothing).
      if (gen.status === 'cancelled' && data.step) await this.cancelUpstream(data, data.step);
      await this.endings.discardUnkept(data);
      // A run that died between its ending's commit and queueing the callback: queued now (its job id dedupes).
      await this.endings.callback(data, gen.status);
      if (gen.status === 'cancelled') await this.endings.publisher(data).send({ type: 'cancelled' });
      return;
    }
    if (data.step) return this.poll(job, token, data.step);
    await this.deps.generations.markProcessing(data.generationId, Math.max(0, (job.processedOn ?? Date.now()) - job.timestamp));
    return this.start(job, token);
  }

  /**
   * Runs the attempt loop (attempt-loop.ts): an endpoint with a `media` operation creates an upstream task (then
   * polled), one with an `images` operation answers at once. Failures other than the provider's (a download, the
   * database) are the job's own: they are thrown, and BullMQ retries the job.
   */
  private async start(job: Job<MediaJobData>, token?: string): Promise<void> {
    const data = job.data;
    const out = await runAttempts(this.deps, data, {
      operation: data.kind,
      call: async (c): Promise<{ task: MediaTask } | { images: ImagesCallResult }> =>
        c.adapter.media
          ? { task: await this.createTask(data, c) }
          : { images: await this.whileNotCancelled(data, (signal) => this.images.generate(data, c, signal)) },
      passThrough: (e) => !isUpstreamError(e) || e.aborted,
      // A task is judged when it finishes (complete / failTask), not when it is created.
      onAnswer: false,
      // An images call's span carries the tokens the provider counted (a task's usage is known at its end: the settle span's).
      usageOf: (v) => ('images' in v && v.images.tokens ? { inputTokens: v.images.tokens.input, outputTokens: v.images.tokens.output } : {}),
    });
    if (out.kind !== 'answered') return this.endings.fail(data, failureError(this.deps, out.attempts, out.kind === 'failed' ? out.last : undefined), out.attempts);
    const { candidate, resolved } = out.call;
    const attempts = out.attempts as MediaAttempt[];
    if ('images' in out.value) {
      const { outputs, tokens, warnings } = out.value.images;
      return this.endings.complete(data, { candidate, resolved, outputs, tokens, warnings, attempts });
    }
    const { task } = out.value;
    const step: MediaStep = { phase: 'polling', candidate: data.candidates.indexOf(candidate), taskId: task.id, polls: 0, pollErrors: 0, createdAt: Date.now(), attempts, saved: [] };
    await job.updateData({ ...data, step });
    return this.onTask(job, token, step, task);
  }

  private async createTask(data: MediaJobData, c: EndpointCall): Promise<MediaTask> {
    const media = c.adapter.media!;
    const spec = media.buildCreate({ model: c.resolved.endpoint.upstreamModel, input: inputFor(data, c.candidate) }, c.resolved.provider.apiKey ?? '');
    const reply = await upstreamRequest(this.deps, c, spec);
    return media.parseTask(reply.json);
  }

  /** One upstream exchange about a running task, within the provider's concurrency cap. */
  private call(resolved: ResolvedEndpoint, adapter: ProviderAdapter, spec: HttpRequestSpec) {
    return upstreamRequest(this.deps, { resolved, adapter }, spec);
  }

  private async poll(job: Job<MediaJobData>, token: string | undefined, step: MediaStep): Promise<void> {
    const data = job.data;
    const candidate = data.candidates[step.candidate];
    const resolved = candidate && endpointBySlug(this.deps.catalog, candidate.slug);
    const adapter = resolved && adapterByKind[resolved.provider.kind];
    if (!candidate || !resolved || !adapter?.media) {
      return this.endings.fail(data, AppError.fromReason('provider_error', 'The endpoint running this generation is no longer in the catalog'), step.attempts);
    }
    let task: MediaTask;
    const span = pollSpan(this.deps.tracing, data, candidate.slug, step.taskId, step.polls + 1);
    try {
      const reply = await this.call(resolved, adapter, adapter.media.buildGet(step.taskId, resolved.provider.apiKey ?? ''));
      task = adapter.media.parseTask(reply.json);
      span?.set({ 'switchyard.task_status': task.status });
    } catch (e) {
      span?.fail((e as Error).message, isUpstreamError(e) ? e.failure.reason : undefined);
      if (!isUpstreamError(e)) throw e;
      const pollErrors = step.pollErrors + 1;
      if (pollErrors > this.opts.maxPollErrors) return this.endings.failTask(data, step, e.failure);
      return this.schedule(job, token, { ...step, pollErrors, polls: step.polls + 1 });
    } finally {
      span?.end();
    }
    return this.onTask(job, token, { ...step, pollErrors: 0 }, task);
  }

  private async onTask(job: Job<MediaJobData>, token: string | undefined, step: MediaStep, task: MediaTask): Promise<void> {
    const data = job.data;
    switch (task.status) {
      case 'pending':
      case 'processing':
        if (Date.now() - step.createdAt > this.opts.taskTimeoutMs) {
          await this.cancelUpstream(data, step);
          return this.endings.failTask(data, step, { reason: 'upstream_timeout', message: `The provider did not finish within ${Math.round(this.opts.taskTimeoutMs / 1000)} s` });
        }
        return this.schedule(job, token, { ...step, polls: step.polls + 1 });
      case 'succeeded':
        return this.completeTask(job, step, task);
      case 'failed':
        return this.endings.failTask(data, step, { reason: 'provider_error', message: `The provider failed the generation: ${task.error ?? 'no reason given'}`, raw: task.error });
      case 'cancelled':
        return this.endings.endCancelled(data);
    }
  }

  /** Saves the step and runs the job again after the back-off (the worker is free meanwhile). */
  private async schedule(job: Job<MediaJobData>, token: string | undefined, step: MediaStep): Promise<void> {
    // Cancelled while this run polled: cancel the upstream task now rather than after the next back-off.
    if (await this.endIfCancelled({ ...job.data, step })) return;
    const delay = Math.min(this.opts.pollMs * 1.5 ** Math.max(0, step.polls - 1), this.opts.maxPollMs);
    await job.updateData({ ...job.data, step });
    await job.moveToDelayed(Date.now() + Math.round(delay), token);
    throw new DelayedError();
  }

  private async completeTask(job: Job<MediaJobData>, step: MediaStep, task: MediaTask): Promise<void> {
    const data = job.data;
    const candidate = data.candidates[step.candidate];
    const resolved = endpointBySlug(this.deps.catalog, candidate.slug)!;
    // Text instead of a file is an answer too (interface.md: the record's `content`); nothing at all is not.
    if (task.outputs.length === 0 && !task.text) return this.endings.failTask(data, step, { reason: 'malformed_reply', message: 'The provider finished without an output file or text' });
    const saved = [...step.saved];
    await this.whileNotCancelled(data, async (signal) => {
      for (const url of task.outputs) {
        if (saved.some((s) => s.source === url)) continue;
        saved.push({ source: url, ...(await this.store.download(data, url, data.kind, signal)) });
        await job.updateData({ ...data, step: { ...step, saved } });
      }
    });
    const timed = saved.length > 0 && (data.kind === 'video' || data.kind === 'audio' || (data.kind === 'upscale' && !data.sourceIsImage));
    // duration_seconds: from the provider's output, else from the request, else from the file (interface.md).
    const seconds = timed ? (task.metrics.durationSeconds ?? data.expectedSeconds ?? saved.find((s) => s.durationSeconds !== undefined)?.durationSeconds) : undefined;
    if (timed && seconds === undefined) this.deps.logger.warn('no duration for a timed media output', { generationId: data.generationId, trace_id: data.traceId });
    const outputs: MediaOutput[] = saved.map((s) => ({ url: s.url, fileId: s.fileId, mimeType: s.mimeType, ...(seconds !== undefined && { durationSeconds: seconds }) }));
    const tokens = task.metrics.inputTokens !== undefined || task.metrics.outputTokens !== undefined ? { input: task.metrics.inputTokens ?? 0, output: task.metrics.outputTokens ?? 0 } : undefined;
    return this.endings.complete(data, { candidate, resolved, outputs, attempts: step.attempts, seconds, tokens, taskId: task.id, content: task.text });
  }

  /**
   * Runs a long upstream exchange with a signal that aborts once the generation is cancelled: the cancel's stop message
   * (shared/queue/generation-bus.ts, the same channel as text's) aborts the job's stop, taken when its run started
   * (`run`), so nobody waits for, or downloads, work nobody will receive.
   */
  private async whileNotCancelled<T>(data: MediaJobData, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctl = new AbortController();
    const stop = this.deps.stops.of(data.generationId);
    const abort = () => ctl.abort(new Error('the generation was cancelled'));
    if (stop?.aborted) abort();
    stop?.addEventListener('abort', abort, { once: true });
    try {
      return await fn(ctl.signal);
    } finally {
      stop?.removeEventListener('abort', abort);
    }
  }

  /** When the generation has been cancelled: cancels the upstream task, removes stored output, tells the API; true. */
  private async endIfCancelled(data: MediaJobData): Promise<boolean> {
    const g = await generationById(this.deps.db, data.generationId, (where) => this.deps.db.generation.findFirst({ where, select: { status: true } }));
    if (g?.status !== 'cancelled') return false;
    if (data.step) await this.cancelUpstream(data, data.step);
    await this.endings.discardUnkept(data);
    // Cancelled by the API, which queued the callback too: again here (deduped) in case it died before it could.
    await this.endings.callback(data, 'cancelled');
    await this.endings.publisher(data).send({ type: 'cancelled' });
    return true;
  }

  /** Best effort: a task that cannot be cancelled upstream still costs the caller nothing. */
  private async cancelUpstream(data: MediaJobData, step: MediaStep): Promise<void> {
    const candidate = data.candidates[step.candidate];
    const resolved = candidate && endpointBySlug(this.deps.catalog, candidate.slug);
    const adapter = resolved && adapterByKind[resolved.provider.kind];
    if (!resolved || !adapter?.media) return;
    try {
      await this.call(resolved, adapter, adapter.media.buildCancel(step.taskId, resolved.provider.apiKey ?? ''));
    } catch (e) {
      this.deps.logger.warn('upstream cancel failed', { generationId: data.generationId, taskId: step.taskId, err: e });
    }
  }

}

/** The media input sent to one endpoint: without the fields it does not support (dropped with a warning). */
export function inputFor(data: MediaJobData, candidate: PlannedCandidate): MediaInput {
  const base = data.image ? imageRequestToMediaInput(data.image.request) : data.input;
  const drop = new Set([...candidate.dropParams, 'callBackUrl']);
  return Object.fromEntries(Object.entries(base).filter(([k, v]) => !drop.has(k) && v !== undefined));
}
