import { AppError } from '../../shared/errors/app-error';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import { adapterFor } from '../../shared/providers/registry';
import { isUpstreamError, UpstreamError } from '../../shared/providers/upstream-error';
import type { TextRequest, TextResult, TextStreamEvent, TokenUsage, UpstreamFailure } from '../../shared/providers/provider.types';
import { estimateTokens, tokenCost } from '../../shared/billing/pricing';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { PlannedCandidate, TextJobData } from '../../shared/queue/job-catalog';
import type { WorkerDeps } from '../worker-deps';
import { StreamAccumulator } from './stream-accumulator';
import { withoutText } from '../../shared/formats/unstored-text';
import { MaskSession } from '../../shared/plugins/masker';
import { stopReasonOf } from '../../shared/queue/cancel-channel';
import { AttemptOrder, retryAfterSeconds, waitFor } from './attempt-order';
import type { InputItem } from '../../shared/providers/provider.types';

export interface Attempt {
  provider: string;
  endpoint: string;
  reason: UpstreamFailure['reason'] | 'unavailable';
  status?: number;
  message: string;
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

/** Parameters a candidate endpoint does not support are dropped from the request sent to it. */
const PARAM_FIELDS: Record<string, Array<keyof TextRequest>> = {
  temperature: ['temperature'],
  top_p: ['topP'],
  top_k: ['topK'],
  presence_penalty: ['presencePenalty'],
  frequency_penalty: ['frequencyPenalty'],
  stop: ['stop'],
  seed: ['seed'],
  tools: ['tools', 'toolChoice', 'parallelToolCalls'],
  tool_choice: ['toolChoice'],
  parallel_tool_calls: ['parallelToolCalls'],
  reasoning: ['reasoning'],
  response_format: ['textFormat'],
  logprobs: ['logprobs', 'topLogprobs'],
  top_logprobs: ['topLogprobs'],
};

function requestFor(base: TextJobData['request'], upstreamModel: string, drop: string[]): TextRequest {
  const req: TextRequest = { ...base, model: upstreamModel };
  for (const p of drop) for (const f of PARAM_FIELDS[p] ?? []) delete req[f];
  return req;
}

/** Output tokens a request is reserved for when it names no maximum (text.service DEFAULT_MAX_OUTPUT_TOKENS). */
const DEFAULT_RESERVED_OUTPUT_TOKENS = 4096;

class MidStreamFailure extends Error {
  constructor(
    readonly failure: UpstreamFailure,
    readonly partial: StreamAccumulator,
    /** Output billed at most (a runaway stream cut by us). */
    readonly maxOutputTokens?: number,
  ) {
    super(failure.message);
  }
}

/**
 * Runs a text job: tries each planned endpoint in order until one answers (fallback on 5xx, 429, timeouts and
 * malformed replies), streams deltas to the waiting API process, then settles the money and the record once.
 */
export class TextExecutor {
  constructor(private readonly deps: WorkerDeps) {}

  /** `signal` aborts the upstream call (cancel, timeout, client gone: shared/queue/cancel-channel.ts). */
  async run(data: TextJobData, timing: { enqueuedAt: number; startedAt: number }, signal?: AbortSignal): Promise<void> {
    const { generations, clock } = this.deps;
    const pub = new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId);
    const queueTimeMs = Math.max(0, timing.startedAt - timing.enqueuedAt);
    if (data.mode === 'async') await generations.markProcessing(data.generationId, queueTimeMs);
    const attempts: Attempt[] = [];
    const masker = data.plugins?.includes('masker') ? new MaskedRun(data) : undefined;
    if (masker) data = masker.data;

    const retryUntil = (slug: string) => this.deps.stats.retryAfterUntil(slug);
    const order = new AttemptOrder(data.candidates, retryUntil);
    for (let next = order.next(); next; next = order.next()) {
      const { candidate } = next;
      if ('skipMs' in next) {
        attempts.push(notCalled(this.deps.catalog, candidate.slug, next.skipMs));
        continue;
      }
      await waitFor(next.waitMs, signal);
      if (signal?.aborted) return this.stopped(data, undefined, attempts, pub, signal, { queueTimeMs, startedAt: timing.startedAt });
      const resolved = endpointBySlug(this.deps.catalog, candidate.slug);
      const adapter = resolved && adapterFor(resolved.provider.kind);
      if (!resolved || !adapter?.text) {
        attempts.push({ provider: resolved?.provider.id ?? candidate.slug, endpoint: candidate.slug, reason: 'unavailable', message: 'no text adapter for this endpoint' });
        continue;
      }
      const started = Date.now();
      try {
        const { result, firstTokenAt } = await this.deps.limiter.run(resolved.provider, () => this.attempt(data, candidate, resolved, pub, masker, signal));
        if (masker && !data.request.stream) masker.unmaskResult(result);
        const finished = Date.now();
        const cost = tokenCost(resolved.endpoint.price, result.usage);
        const warnings = [...data.warnings, ...candidate.dropParams.map((p) => `Parameter '${p}' is not supported by ${candidate.model} via ${resolved.provider.id} and was ignored`)];
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
        const outcome = await generations.finish(data.generationId, {
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
          latencyMs: queueTimeMs + (firstTokenAt - started),
          queueTimeMs,
          generationTimeMs: finished - timing.startedAt,
          upstreamId: result.upstreamId ?? null,
        });
        this.deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: 'ok' });
        this.deps.stats.record(candidate.slug, {
          ok: true,
          at: finished,
          ttftMs: firstTokenAt - started,
          tokensPerSecond: finished > firstTokenAt ? (result.usage.outputTokens * 1000) / (finished - firstTokenAt) : undefined,
        });
        if (data.stickyKey) this.deps.stats.setSticky(data.stickyKey, candidate.slug);
        // The client is shown what was charged (the same number as the history and the ledger).
        payload.cost = outcome.charged.toFixed(10);
        await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
        return;
      } catch (e) {
        if (signal?.aborted) {
          const partial = e instanceof MidStreamFailure ? { candidate, providerId: resolved.provider.id, failure: e } : undefined;
          return this.stopped(data, partial, attempts, pub, signal, { queueTimeMs, startedAt: timing.startedAt });
        }
        if (e instanceof MidStreamFailure) return this.failMidStream(data, candidate, resolved.provider.id, e, attempts, pub, { queueTimeMs, startedAt: timing.startedAt });
        const failure: UpstreamFailure = isUpstreamError(e)
          ? e.failure
          : { reason: 'malformed_reply', message: `unreadable reply: ${(e as Error).message}`, fallback: true };
        attempts.push({ provider: resolved.provider.id, endpoint: candidate.slug, reason: failure.reason, status: failure.status, message: failure.message });
        this.deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: failure.reason });
        // Input this endpoint cannot express was never sent: it says nothing about the endpoint's health.
        const retryAfterMs = isUpstreamError(e) ? e.retryAfterMs : undefined;
        const at = Date.now();
        if (!(failure.reason === 'bad_request' && failure.status === undefined)) this.deps.stats.record(candidate.slug, { ok: false, at, ...(retryAfterMs !== undefined && { retryUntil: at + retryAfterMs }) });
        if (retryAfterMs !== undefined) order.failedWithRetryAfter(candidate, retryAfterMs);
        this.deps.logger.warn('provider attempt failed', { generationId: data.generationId, endpoint: candidate.slug, reason: failure.reason, status: failure.status, trace_id: data.traceId });
        if (!failure.fallback) return this.fail(data, attempts, failure, pub, queueTimeMs, clock().getTime() - timing.startedAt);
      }
    }
    return this.fail(data, attempts, undefined, pub, queueTimeMs, clock().getTime() - timing.startedAt);
  }

  private async attempt(
    data: TextJobData,
    candidate: PlannedCandidate,
    resolved: NonNullable<ReturnType<typeof endpointBySlug>>,
    pub: GenerationPublisher,
    masker?: MaskedRun,
    signal?: AbortSignal,
  ): Promise<{ result: TextResult; firstTokenAt: number }> {
    const adapter = adapterFor(resolved.provider.kind)!;
    const text = adapter.text!;
    const req = requestFor(data.request, resolved.endpoint.upstreamModel, candidate.dropParams);
    const spec = text.buildRequest(req, resolved.provider.apiKey ?? '', { defaultMaxOutputTokens: resolved.endpoint.maxOutputTokens });
    const call = { timeoutMs: resolved.provider.timeoutMs, extractError: adapter.extractError, signal };
    if (!req.stream) {
      const reply = await this.deps.upstream.request(resolved.provider.baseUrl, spec, call);
      const result = text.parseResponse(reply.json);
      return { result, firstTokenAt: Date.now() };
    }

    const events = await this.deps.upstream.stream(resolved.provider.baseUrl, spec, call);
    const parser = text.createStreamParser();
    const acc = new StreamAccumulator();
    const unmasker = masker?.streamUnmasker();
    // A provider that ignores the output limit and never stops would hold the job (and the stream) forever: past
    // twice the output the request is reserved for, the stream is cut and billed up to that limit.
    const outputLimit = Math.min(req.maxOutputTokens ?? Infinity, resolved.endpoint.maxOutputTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS);
    let announced = false;
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
        if (acc.produced) throw new MidStreamFailure(failure, acc);
        throw new UpstreamError(failure);
      }
      if (!announced && (ev.type === 'text_delta' || ev.type === 'tool_call_start' || ev.type === 'reasoning_delta')) {
        announced = true;
        await pub.send({ type: 'started', endpoint: candidate.slug, model: candidate.model });
      }
      acc.push(ev);
      if (acc.outputTokens() > 2 * outputLimit) {
        throw new MidStreamFailure({ reason: 'malformed_reply', message: `the provider kept streaming past max_output_tokens (${outputLimit})`, fallback: false }, acc, outputLimit);
      }
      if (ev.type !== 'usage' && ev.type !== 'finish') await pub.send({ type: 'delta', event: ev });
    };
    try {
      for await (const sse of events) for (const ev of parser.push(sse)) await handle(ev);
      for (const ev of parser.end()) await handle(ev);
    } catch (e) {
      if (e instanceof MidStreamFailure) throw e;
      const failure: UpstreamFailure = isUpstreamError(e) ? e.failure : { reason: 'malformed_reply', message: (e as Error).message, fallback: true };
      // Before the first content byte we may still fall back; after it, the stream ends with an error.
      if (acc.produced) throw new MidStreamFailure(failure, acc);
      throw isUpstreamError(e) ? e : new UpstreamError(failure);
    }
    return { result: acc.result(estimateInput(data)), firstTokenAt: acc.firstTokenAt ?? Date.now() };
  }

  private async fail(data: TextJobData, attempts: Attempt[], last: UpstreamFailure | undefined, pub: GenerationPublisher, queueTimeMs: number, generationTimeMs: number) {
    // Every endpoint that was tried refused to express the input (e.g. a `file_url` part a chat-completions
    // provider cannot take): the caller's input is the problem, so 400, not 502.
    const refused = attempts.filter((a) => a.reason !== 'unavailable');
    const inputUnsupported = refused.length > 0 && refused.every((a) => a.reason === 'bad_request' && a.status === undefined);
    const err = inputUnsupported
      ? new AppError('BAD_REQUEST', `The input cannot be sent to any provider of this model: ${[...new Set(refused.map((a) => a.message))].join('; ')}`, {
          metadata: { reason: 'validation_failed', attempts },
        })
      : last && !last.fallback && last.reason === 'bad_request'
        ? new AppError('BAD_REQUEST', `The provider refused the request: ${last.message}`, {
            metadata: { reason: 'provider_error', raw: last.raw ?? last.message, provider_name: attempts[attempts.length - 1]?.provider, attempts },
          })
        : allFailed(attempts, last, (slug) => this.deps.stats.retryAfterUntil(slug));
    const error = { code: err.code, status: err.status, message: err.message, metadata: err.metadata };
    await this.deps.generations.finish(data.generationId, { status: 'failed', error, routing: { attempts }, attemptsCount: attempts.length, queueTimeMs, generationTimeMs });
    await pub.send({ type: 'failed', error });
  }

  /** The stream broke after content reached the client: bill what was produced, end the stream with an error. */
  private async failMidStream(
    data: TextJobData,
    candidate: PlannedCandidate,
    providerId: string,
    e: MidStreamFailure,
    attempts: Attempt[],
    pub: GenerationPublisher,
    timing: { queueTimeMs: number; startedAt: number },
  ) {
    attempts.push({ provider: providerId, endpoint: candidate.slug, reason: e.failure.reason, status: e.failure.status, message: e.failure.message });
    const err = AppError.fromReason('provider_error', `The provider failed in the middle of the stream: ${e.failure.message}`, { raw: e.failure.raw ?? e.failure.message, provider_name: providerId, attempts });
    this.deps.metrics.providerAttempts.inc({ provider: providerId, outcome: e.failure.reason });
    this.deps.stats.record(candidate.slug, { ok: false, at: Date.now() });
    await this.settlePartial(data, candidate, providerId, e, attempts, pub, timing, { status: 'failed', error: err });
  }

  /**
   * The job was told to stop (shared/queue/cancel-channel.ts) and its upstream call is aborted. `cancelled`: the
   * generation already ended uncharged. `timeout` / `client_gone`: a stream that had sent content fails and is
   * billed for what was produced (decisions.md section 4; a cancelled generation never costs anything), one that
   * had not is cancelled uncharged.
   */
  private async stopped(
    data: TextJobData,
    partial: { candidate: PlannedCandidate; providerId: string; failure: MidStreamFailure } | undefined,
    attempts: Attempt[],
    pub: GenerationPublisher,
    signal: AbortSignal,
    timing: { queueTimeMs: number; startedAt: number },
  ) {
    const reason = stopReasonOf(signal) ?? 'cancelled';
    this.deps.logger.info('generation stopped, upstream call aborted', { generationId: data.generationId, reason, trace_id: data.traceId });
    if (!partial || reason === 'cancelled') {
      const outcome = await this.deps.generations.finish(data.generationId, { status: 'cancelled', routing: { attempts }, attemptsCount: attempts.length, queueTimeMs: timing.queueTimeMs, generationTimeMs: Date.now() - timing.startedAt });
      if (outcome.applied) await pub.send({ type: 'cancelled' });
      return;
    }
    const { candidate, providerId, failure } = partial;
    attempts.push({ provider: providerId, endpoint: candidate.slug, reason: 'provider_error', message: `stopped: ${reason}` });
    const err =
      reason === 'timeout'
        ? new AppError('REQUEST_TIMEOUT', 'Timed out waiting for the model', { metadata: { reason: 'upstream_timeout' } })
        : new AppError('REQUEST_TIMEOUT', 'The client disconnected: the stream was stopped and billed for what was produced');
    await this.settlePartial(data, candidate, providerId, failure, attempts, pub, timing, { status: 'failed', error: err });
  }

  /** Charges what a cut stream produced, records the ending, and sends the final message with that same cost. */
  private async settlePartial(
    data: TextJobData,
    candidate: PlannedCandidate,
    providerId: string,
    e: MidStreamFailure,
    attempts: Attempt[],
    pub: GenerationPublisher,
    timing: { queueTimeMs: number; startedAt: number },
    end: { status: 'failed'; error: AppError },
  ) {
    const resolved = endpointBySlug(this.deps.catalog, candidate.slug)!;
    const result = e.partial.result(estimateInput(data));
    if (e.maxOutputTokens !== undefined) result.usage = { ...result.usage, outputTokens: Math.min(result.usage.outputTokens, e.maxOutputTokens) };
    const cost = tokenCost(resolved.endpoint.price, result.usage);
    const error = { code: end.error.code, status: end.error.status, message: end.error.message, metadata: end.error.metadata };
    const payload: TextDonePayload = { result, model: candidate.model, endpoint: candidate.slug, provider: providerId, cost: cost.toFixed(10), warnings: data.warnings, attempts };
    const outcome = await this.deps.generations.finish(data.generationId, {
      status: end.status,
      cost,
      error,
      result: recorded(data, payload),
      usage: result.usage,
      model: candidate.model,
      provider: providerId,
      finalEndpointSlug: candidate.slug,
      routing: { attempts },
      finishReason: 'error',
      attemptsCount: attempts.length,
      queueTimeMs: timing.queueTimeMs,
      generationTimeMs: Date.now() - timing.startedAt,
    });
    // What the event shows is what was charged: when another ending won (a cancel), that ending's charge (0).
    payload.cost = outcome.charged.toFixed(10);
    await pub.send({ type: 'failed', error, payload });
  }
}

/** The payload as the generation's record keeps it: without the text when the caller asked for `store: false`. */
function recorded(data: TextJobData, payload: TextDonePayload): TextDonePayload {
  return data.store === false ? { ...payload, result: withoutText(payload.result) } : payload;
}

/** An attempt not made: the endpoint's `Retry-After` is further away than a job waits. */
export function notCalled(catalog: WorkerDeps['catalog'], slug: string, waitMs: number): Attempt {
  const provider = endpointBySlug(catalog, slug)?.provider.id ?? slug;
  return { provider, endpoint: slug, reason: 'rate_limited', message: `not called: the provider asked to wait ${Math.ceil(waitMs / 1000)} s (Retry-After)` };
}

/**
 * 502 `all_providers_failed`. When every provider rate-limited the request and one said when to come back, the
 * error says so and carries that wait (`metadata.retry_after_seconds`, sent as the `Retry-After` header).
 */
export function allFailed(attempts: Attempt[], last: UpstreamFailure | undefined, retryUntil: (slug: string) => number): AppError {
  const tried = attempts.filter((a) => a.reason !== 'unavailable');
  const wait = tried.length > 0 && tried.every((a) => a.reason === 'rate_limited') ? retryAfterSeconds(tried.map((a) => a.endpoint), retryUntil) : undefined;
  const message =
    wait !== undefined
      ? `Every provider of this model is rate-limiting requests: retry after ${wait} s`
      : attempts.length
        ? `Every provider failed: ${attempts.map((a) => `${a.provider} (${a.reason})`).join(', ')}`
        : 'No provider could take the request';
  return AppError.fromReason('all_providers_failed', message, {
    attempts,
    raw: last?.raw ?? attempts[attempts.length - 1]?.message,
    provider_name: attempts[attempts.length - 1]?.provider,
    ...(wait !== undefined && { retry_after_seconds: wait }),
  });
}

/** Input tokens for a stream that ended without the provider's usage: our estimate of the request. */
function estimateInput(data: TextJobData): number {
  return estimateTokens(JSON.stringify(data.request.input) + (data.request.instructions ?? ''));
}

export type { TokenUsage };

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
