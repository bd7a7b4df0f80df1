import { AppError, type StoredError } from '../../shared/errors/app-error';
import { isUpstreamError, UpstreamError } from '../../shared/providers/upstream-error';
import { DEFAULT_MAX_OUTPUT_TOKENS, type InputItem, type TextResult, type TextStreamEvent, type TokenUsage, type UpstreamFailure } from '../../shared/providers/provider.types';
import { tokenCost, producedUsage, type UsageSoFar } from '../../shared/billing/pricing';
import { requestWithout } from '../../shared/formats/format-utils';
import { tierPrice, type ResolvedEndpoint } from '../../shared/catalog/catalog-index';
import { ignoredParameterWarnings } from '../../shared/routing/route-parameters';
import { GenerationPublisher, stopReasonOf } from '../../shared/queue/generation-bus';
import { JobLost, type JobLock } from '../../shared/queue/job-lock';
import { endGeneration, type StreamEnding } from '../../shared/billing/ending';
import type { Finish } from '../../shared/billing/ledger';
import type { PlannedCandidate, TextDonePayload, TextJobData } from '../../shared/queue/job-catalog';
import type { TextMappingOptions } from '../../shared/providers/adapter.types';
import type { WorkerDeps } from '../worker-deps';
import { StreamAccumulator } from './stream-accumulator';
import { StreamCheckpoints, type CheckpointOutcome } from '../../shared/billing/settlement-journal';
import { withoutText } from '../../shared/formats/unstored-text';
import { MaskSession } from '../../shared/plugins/masker';
import type { GenAiUsage } from '../../shared/telemetry/tracing';
import { endFailed, endStopped, runAttempts, upstreamRequest, withinCap, type Attempt, type EndpointCall, type RunTiming } from './attempt-loop';
import { attemptOf, failedAttempt, failureError } from './attempt-failures';

export type { Attempt };

/** A stream that broke (or was stopped) after content reached the client: what it produced is billed. */
class MidStreamFailure extends Error {
  constructor(
    readonly failure: UpstreamFailure,
    readonly partial: StreamAccumulator,
    readonly candidate: PlannedCandidate,
    readonly resolved: ResolvedEndpoint,
    /** What the provider had reported of the usage when the stream was cut (Anthropic: the input). */
    readonly soFar: UsageSoFar | undefined,
  ) {
    super(failure.message);
  }

  get providerId(): string {
    return this.resolved.provider.id;
  }
}

interface Answer {
  result: TextResult;
  firstTokenAt: number;
  /** What the adapter could not send as asked (HttpRequestSpec `warnings`). */
  warnings: string[];
}

/** A stream's checkpoints, and the settlement a checkpoint holds for a stream cut now (what reached the client so far). */
interface Checkpointing {
  at: StreamCheckpoints;
  of(cut: MidStreamFailure): CheckpointOutcome;
}

/** The ending a checkpoint records: whoever keeps it ends the generation so, charged for what reached the client by then. */
const checkpointEnding = () => new AppError('SERVICE_UNAVAILABLE', 'The process streaming this answer stopped: it is charged for what reached you by its last checkpoint; repeat the request');

/**
 * Runs a text job through the attempt loop (attempt-loop.ts: fallback on 5xx, 429, timeouts and malformed
 * replies), streams deltas to the waiting API process, then settles the money and the record once.
 */
export class TextExecutor {
  constructor(private readonly deps: WorkerDeps) {}

  /**
   * `signal` aborts the upstream call (cancel, timeout, client gone: shared/queue/generation-bus.ts). `lock`: the job's
   * lock in this process (shared/queue/job-lock.ts): once it is lost, the run sends and settles nothing more (JobLost).
   */
  async run(data: TextJobData, timing: { enqueuedAt: number; startedAt: number }, signal?: AbortSignal, lock?: JobLock): Promise<void> {
    const pub = new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId, this.deps.lane.buses, lock);
    const run: RunTiming = { queueTimeMs: Math.max(0, timing.startedAt - timing.enqueuedAt), startedAt: timing.startedAt };
    if (data.mode === 'async') await this.deps.generations.markProcessing(data.generationId, run.queueTimeMs);
    const masker = data.plugins?.includes('masker') ? new MaskedRun(data) : undefined;
    if (masker) data = masker.data;
    const job = data;

    const attempts: Attempt[] = [];
    const checkpoint: Checkpointing | undefined = data.request.stream
      ? {
          at: new StreamCheckpoints(this.deps.settlements, data.generationId, this.deps.logger, lock),
          of: (cut) => {
            const { finish, payload, error } = this.cutSettlement(job, cut, attempts, run, checkpointEnding());
            // A record not committed yet (a stream's waits for its close: STREAM_RECORD_WAIT_MS) rides with it, as with a promise.
            const record = this.deps.lane.recordOf(job.generationId);
            return { finish, replyTo: job.replyTo, message: { type: 'failed', error: error!, payload }, ...(record && !record.done && { open: record.row }) };
          },
        }
      : undefined;
    let out;
    try {
      out = await runAttempts<Answer>(this.deps, data, {
        operation: 'text',
        // (c) => this.attempt(job, pub, masker, checkpoint, c), without a function of its own in between.
        call: this.attempt.bind(this, job, pub, masker, checkpoint),
        signal,
        passThrough: (e) => e instanceof MidStreamFailure || e instanceof JobLost,
        attempts,
        onAnswer: ({ result, firstTokenAt }, started, finished) => ({
          ttftMs: firstTokenAt - started,
          tokensPerSecond: finished > firstTokenAt ? (result.usage.outputTokens * 1000) / (finished - firstTokenAt) : undefined,
        }),
        usageOf: textUsage,
      });
    } catch (e) {
      if (e instanceof MidStreamFailure) return this.failMidStream(data, e, attempts, pub, run).then(() => checkpoint?.at.ended());
      throw e;
    }
    if (out.kind === 'stopped' && out.cause instanceof JobLost) throw out.cause;
    if (out.kind === 'stopped') return this.stopped(data, out.cause instanceof MidStreamFailure ? out.cause : undefined, attempts, pub, signal!, run).then(() => checkpoint?.at.ended());
    if (out.kind === 'failed') return endFailed(this.deps, pub, data, failureError(this.deps, attempts, out.last), attempts, run);

    const { result, firstTokenAt } = out.value;
    const { candidate, resolved } = out.call;
    if (masker && !data.request.stream) masker.unmaskResult(result);
    // At the price of the tier the provider says served it (a priority call it answered at `default` costs the standard price).
    const cost = tokenCost(tierPrice(resolved.endpoint, result.serviceTier ?? data.request.serviceTier), result.usage);
    const dropped = candidate.dropParams.length ? ignoredParameterWarnings(candidate.dropParams, candidate.model, resolved.provider.id) : [];
    const warnings = [...data.warnings, ...dropped, ...out.value.warnings];
    const payload: TextDonePayload = {
      result,
      model: candidate.model,
      endpoint: candidate.slug,
      provider: resolved.provider.id,
      cost: cost.toFixed(10),
      warnings,
      attempts,
      plugins: masker?.usage(),
    };
    if (data.stickyKey) this.deps.stats.setSticky(data.stickyKey, candidate.slug);
    // The client is shown what is charged (the same number as the history and the ledger).
    const finish: Finish & { status: 'completed' } = {
      status: 'completed',
      cost,
      result: recorded(data, payload),
      usage: result.usage,
      warnings,
      model: candidate.model,
      provider: resolved.provider.id,
      finalEndpointSlug: candidate.slug,
      routing: { attempts, answeredBy: candidate.slug },
      finishReason: result.finishReason,
      attemptsCount: attempts.length + 1,
      latencyMs: run.queueTimeMs + (firstTokenAt - out.started),
      queueTimeMs: run.queueTimeMs,
      generationTimeMs: out.finished - run.startedAt,
      upstreamId: result.upstreamId ?? null,
    };
    await endGeneration(this.deps, pub, data, { kind: 'answer', finish, payload });
    await checkpoint?.at.ended();
  }

  /** Calls one endpoint: a plain request, or a stream whose deltas go to the waiting API process as they come. */
  private async attempt(data: TextJobData, pub: GenerationPublisher, masker: MaskedRun | undefined, checkpoint: Checkpointing | undefined, c: EndpointCall): Promise<Answer> {
    const { candidate, resolved, adapter, signal } = c;
    const text = adapter.text!;
    const req = requestWithout(data.request, resolved.endpoint.upstreamModel, candidate.dropParams);
    const spec = text.buildRequest(req, resolved.provider.apiKey ?? '', textMappingOptions(resolved, data.apiType));
    const warnings = spec.warnings ?? [];
    if (!req.stream) {
      const reply = await upstreamRequest(this.deps, c, spec, signal);
      return { result: text.parseResponse(reply.json), firstTokenAt: Date.now(), warnings };
    }
    // The provider's concurrency cap holds for the whole stream.
    return withinCap(this.deps, resolved.provider, async () => {
      const events = await this.deps.upstream.stream(resolved.provider.baseUrl, spec, { timeoutMs: resolved.provider.timeoutMs, extractError: adapter.extractError, signal });
      const parser = text.createStreamParser();
      const acc = new StreamAccumulator(text.tokenizer);
      const cut = (failure: UpstreamFailure) => new MidStreamFailure(failure, acc, candidate, resolved, parser.usageSoFar?.());
      const unmasker = masker?.streamUnmasker();
      // A provider that ignores the output limit and never stops would hold the job (and the stream) forever: past
      // twice the output the request is reserved for, the stream is cut and billed up to that limit (settlePartial).
      const outputLimit = outputLimitOf(data, resolved);
      const handle = async (ev: TextStreamEvent): Promise<void> => {
        if (unmasker && ev.type === 'text_delta') {
          const text = unmasker.push(ev.text);
          if (!text) return;
          ev = { ...ev, text };
        }
        if (unmasker && ev.type === 'finish') {
          const rest = unmasker.flush();
          if (rest) await handle({ type: 'text_delta', text: rest });
        }
        if (ev.type === 'error') {
          const failure: UpstreamFailure = { reason: 'malformed_reply', message: ev.message, raw: ev.raw, fallback: true };
          if (acc.produced) throw cut(failure);
          throw new UpstreamError(failure);
        }
        // The first content (the accumulator's rule of what is content) announces the endpoint that answers.
        const before = acc.produced;
        acc.push(ev);
        if (!before && acc.produced) await pub.send({ type: 'started', endpoint: candidate.slug, model: candidate.model });
        if (acc.outputTokens > 2 * outputLimit) {
          throw cut({ reason: 'malformed_reply', message: `the provider kept streaming past max_output_tokens (${outputLimit})`, fallback: false });
        }
        if (ev.type === 'usage' || ev.type === 'finish') return;
        await pub.send({ type: 'delta', event: ev });
        // What reached the client is settled in advance every second or so (the bounded exception: decisions.md section 4).
        checkpoint?.at.delivered(acc.outputTokens, () => checkpoint.of(cut({ reason: 'provider_error', message: 'checkpoint', fallback: false })));
      };
      try {
        for await (const sse of events) for (const ev of parser.push(sse)) await handle(ev);
        for (const ev of parser.end()) await handle(ev);
      } catch (e) {
        if (e instanceof MidStreamFailure || e instanceof JobLost) throw e;
        const failure: UpstreamFailure = isUpstreamError(e) ? e.failure : { reason: 'malformed_reply', message: (e as Error).message, fallback: true };
        // Before the first content byte we may still fall back; after it, the stream ends with an error.
        if (acc.produced) throw cut(failure);
        throw isUpstreamError(e) ? e : new UpstreamError(failure);
      }
      const usage = producedUsage({ final: acc.reported, soFar: parser.usageSoFar?.(), outputWeight: acc.outputTokens, request: data.request, family: acc.family });
      return { result: acc.result(usage), firstTokenAt: acc.firstTokenAt ?? Date.now(), warnings };
    });
  }

  /** The stream broke after content reached the client: bill what was produced, end the stream with an error. */
  private async failMidStream(data: TextJobData, e: MidStreamFailure, attempts: Attempt[], pub: GenerationPublisher, timing: RunTiming) {
    attempts.push(attemptOf(e.providerId, e.candidate.slug, e.failure));
    failedAttempt(this.deps, e.candidate.slug, e.providerId, e.failure);
    const err = AppError.fromReason('provider_error', `The provider failed in the middle of the stream: ${e.failure.message}`, { raw: e.failure.raw ?? e.failure.message, provider_name: e.providerId, attempts });
    await this.settlePartial(data, e, attempts, pub, timing, err);
  }

  /**
   * The job was told to stop (shared/queue/generation-bus.ts) and its upstream call is aborted. Nothing streamed yet:
   * the generation ends cancelled, uncharged. A stream that had sent content is charged for what was produced
   * (decisions.md section 4): `cancelled` (through the API) ends it cancelled, `timeout` / `client_gone` failed.
   * A generation that ended first (the API's uncharged cancel) keeps that ending.
   */
  private async stopped(data: TextJobData, partial: MidStreamFailure | undefined, attempts: Attempt[], pub: GenerationPublisher, signal: AbortSignal, timing: RunTiming) {
    const reason = stopReasonOf(signal) ?? 'cancelled';
    if (!partial) return endStopped(this.deps, pub, data, attempts, timing);
    this.deps.logger.info('generation stopped, upstream call aborted', { generationId: data.generationId, reason, trace_id: data.traceId });
    attempts.push({ provider: partial.providerId, endpoint: partial.candidate.slug, reason: 'provider_error', message: `stopped: ${reason}` });
    const ending =
      reason === 'cancelled'
        ? 'cancelled'
        : reason === 'timeout'
          ? new AppError('REQUEST_TIMEOUT', 'Timed out waiting for the model', { metadata: { reason: 'upstream_timeout' } })
          : new AppError('REQUEST_TIMEOUT', 'The client disconnected: the stream was stopped and billed for what was produced');
    await this.settlePartial(data, partial, attempts, pub, timing, ending);
  }

  /**
   * Charges what a cut stream produced, records the ending (failed with `ending`, or cancelled), and sends the final
   * message with that same cost.
   */
  private async settlePartial(data: TextJobData, e: MidStreamFailure, attempts: Attempt[], pub: GenerationPublisher, timing: RunTiming, ending: AppError | 'cancelled'): Promise<void> {
    const { finish, payload, error } = this.cutSettlement(data, e, attempts, timing, ending);
    // What the event shows is what was charged: when another ending won (a cancel), that ending's charge (0).
    const last: StreamEnding = (charged, applied) => {
      payload.cost = charged.toFixed(10);
      if (error) return { type: 'failed', error, payload };
      // The API's cancel that ended it first told its client already.
      return applied ? { type: 'cancelled', payload } : null;
    };
    await endGeneration(this.deps, pub, data, { kind: 'cut', finish, last });
  }

  /**
   * What a stream cut now is charged and recorded as (failed with `ending`, or cancelled) and the payload its last message
   * shows: what the provider produced (decisions.md section 4), its usage so far, else an honest count of what was sent
   * and delivered; never more output than the whole answer was allowed, so never more than the whole answer could cost.
   */
  private cutSettlement(data: TextJobData, e: MidStreamFailure, attempts: Attempt[], timing: RunTiming, ending: AppError | 'cancelled'): { finish: Finish; payload: TextDonePayload; error?: StoredError } {
    const { candidate, providerId } = e;
    const usage = producedUsage({ final: e.partial.reported, soFar: e.soFar, outputWeight: e.partial.outputTokens, request: data.request, family: e.partial.family });
    const result = e.partial.result({ ...usage, outputTokens: Math.min(usage.outputTokens, outputLimitOf(data, e.resolved)) });
    const cost = tokenCost(tierPrice(e.resolved.endpoint, result.serviceTier ?? data.request.serviceTier), result.usage);
    const error = ending === 'cancelled' ? undefined : ending.toStored();
    const payload: TextDonePayload = { result, model: candidate.model, endpoint: candidate.slug, provider: providerId, cost: cost.toFixed(10), warnings: data.warnings, attempts };
    const finish: Finish = {
      status: error ? 'failed' : 'cancelled',
      cost,
      error,
      result: recorded(data, payload),
      usage: result.usage,
      model: candidate.model,
      provider: providerId,
      finalEndpointSlug: candidate.slug,
      routing: { attempts },
      finishReason: error ? 'error' : 'cancelled',
      attemptsCount: attempts.length,
      queueTimeMs: timing.queueTimeMs,
      generationTimeMs: Date.now() - timing.startedAt,
    };
    return { finish, payload, error };
  }
}

export type { TokenUsage };

/** The output a text job may have on its endpoint: what its reservation is sized for. */
function outputLimitOf(data: TextJobData, resolved: ResolvedEndpoint): number {
  return Math.min(data.request.maxOutputTokens ?? Infinity, resolved.endpoint.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS);
}

/**
 * What an adapter needs of the endpoint to write a text request: the endpoint's limit, the provider's timeout, and
 * whether a Responses API call goes upstream as one (`responsesApi` endpoints; chat completions stay chat completions).
 */
export function textMappingOptions(resolved: ResolvedEndpoint, apiType?: TextJobData['apiType']): TextMappingOptions {
  return { defaultMaxOutputTokens: resolved.endpoint.maxOutputTokens, timeoutMs: resolved.provider.timeoutMs, responsesApi: resolved.endpoint.responsesApi === true && apiType === 'responses' };
}

/** What a text answer reports for its attempt's span (workers/services/job-spans.ts). */
function textUsage({ result }: Answer): GenAiUsage {
  return { responseModel: result.modelVersion, responseId: result.upstreamId, finishReason: result.finishReason, inputTokens: result.usage.inputTokens, outputTokens: result.usage.outputTokens };
}

/** The payload as the generation's record keeps it: without the text when the caller asked for `store: false`. */
export function recorded(data: TextJobData, payload: TextDonePayload): TextDonePayload {
  return data.store === false ? { ...payload, result: withoutText(payload.result) } : payload;
}

/** The masker plugin around one job: masks the request once, unmasks what comes back, times both. */
class MaskedRun {
  readonly data: TextJobData;
  private readonly session = new MaskSession();
  private ms = 0;

  constructor(original: TextJobData) {
    const started = performance.now();
    const mask = (t: string) => this.session.mask(t);
    const input = original.request.input.map((item): InputItem => {
      if (item.type === 'message') return { ...item, content: item.content.map((c) => (c.type === 'input_text' || c.type === 'output_text' ? { ...c, text: mask(c.text) } : c)) };
      if (item.type === 'function_call_output') return { ...item, output: mask(item.output) };
      if (item.type === 'reasoning') return { ...item, summary: item.summary.map((s) => ({ ...s, text: mask(s.text) })) };
      return item;
    });
    const request = { ...original.request, input, instructions: original.request.instructions && mask(original.request.instructions) };
    this.data = { ...original, request };
    this.ms += performance.now() - started;
  }

  streamUnmasker() {
    return this.session.streamUnmasker();
  }

  unmaskResult(result: TextResult): void {
    const started = performance.now();
    for (const o of result.output) {
      if (o.type === 'message') for (const c of o.content) c.text = this.session.unmask(c.text);
      if (o.type === 'function_call') o.arguments = this.session.unmask(o.arguments);
    }
    this.ms += performance.now() - started;
  }

  usage(): Record<string, unknown> {
    return { masker: { operations: ['mask', 'unmask'], latency_ms: Math.round(this.ms * 1000) / 1000, cost_rub: 0 }, total_cost_rub: 0 };
  }
}
