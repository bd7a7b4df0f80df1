import { AppError } from '../../shared/errors/app-error';
import { endpointBySlug } from '../../shared/catalog/catalog-index';
import { adapterFor } from '../../shared/providers/registry';
import { isUpstreamError, UpstreamError } from '../../shared/providers/upstream-error';
import type { TextRequest, TokenUsage, UpstreamFailure } from '../../shared/providers/provider.types';
import { tokenCost } from '../../shared/billing/pricing';
import { ZERO, type Decimal } from '../../shared/billing/money';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { PlannedCandidate, SystemoneJobData, TextJobData } from '../../shared/queue/job-catalog';
import { readAnswer, schemeOf, type TypedAnswer } from '../../shared/formats/systemone.mapper';
import type { WorkerDeps } from '../worker-deps';
import type { Attempt } from './text-executor';

/** A failed upstream call, with the question it was for (the same endpoint may fail for several questions). */
export interface QuestionAttempt extends Attempt {
  question: string;
}

/** What the API process receives (and the generation's `result`) when every question is answered. */
export interface SystemoneDonePayload {
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

export function isSystemoneJob(data: TextJobData | SystemoneJobData): data is SystemoneJobData {
  return data.apiType === 'systemone' && Array.isArray((data as SystemoneJobData).questions);
}

/** Request fields dropped for an endpoint that lacks the parameter (as the text executor does). */
const PARAM_FIELDS: Record<string, Array<keyof TextRequest>> = {
  temperature: ['temperature'],
  top_logprobs: ['topLogprobs'],
};

interface Answered {
  ok: true;
  answer: TypedAnswer;
  usage: TokenUsage;
  cost: Decimal;
  slug: string;
  provider: string;
  model: string;
}
interface Unanswered {
  ok: false;
  /** The last failure when it forbids trying further endpoints (a 400: the same input fails everywhere). */
  fatal?: UpstreamFailure;
}

const noLogprobs = (message: string): UpstreamError => new UpstreamError({ reason: 'malformed_reply', message, fallback: true });

/**
 * Runs a typed-question job: every question concurrently, each trying the planned endpoints in order until one
 * returns log-probabilities that cover an allowed answer token (a reply without them is a failed attempt, so a
 * provider without log-probabilities is skipped). The generation settles once, with the summed cost, and
 * fails as a whole (charging nothing) when any question stays unanswered.
 */
export class SystemoneExecutor {
  constructor(private readonly deps: WorkerDeps) {}

  /** `signal` aborts every question's upstream call when the generation is cancelled or timed out. */
  async run(data: SystemoneJobData, timing: { enqueuedAt: number; startedAt: number }, signal?: AbortSignal): Promise<void> {
    const pub = new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId);
    const queueTimeMs = Math.max(0, timing.startedAt - timing.enqueuedAt);
    const attempts: QuestionAttempt[] = [];
    const outcomes = await Promise.all(data.questions.map((q) => this.answer(data, q, attempts, signal)));
    const generationTimeMs = Math.max(0, this.deps.clock().getTime() - timing.startedAt);
    if (signal?.aborted) {
      // Cancelled or timed out: nobody receives the answers, the generation ends cancelled and uncharged.
      this.deps.logger.info('generation stopped, upstream calls aborted', { generationId: data.generationId, trace_id: data.traceId });
      const outcome = await this.deps.generations.finish(data.generationId, { status: 'cancelled', attemptsCount: attempts.length, queueTimeMs, generationTimeMs });
      if (outcome.applied) await pub.send({ type: 'cancelled' });
      return;
    }

    const answered = outcomes.filter((o): o is Answered => o.ok);
    if (answered.length < outcomes.length) {
      const fatal = outcomes.find((o): o is Unanswered => !o.ok && o.fatal !== undefined)?.fatal;
      return this.fail(data, attempts, fatal, pub, queueTimeMs, generationTimeMs);
    }

    const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
    let cost = ZERO;
    for (const a of answered) {
      usage.inputTokens += a.usage.inputTokens;
      usage.outputTokens += a.usage.outputTokens;
      cost = cost.plus(a.cost);
    }
    const main = mainEndpoint(answered, data.candidates);
    const answers = Object.fromEntries(data.questions.map((q, i) => [q.name, answered[i].answer]));
    const payload: SystemoneDonePayload = {
      model: main.model,
      answers,
      usage,
      cost: cost.toFixed(10),
      provider: main.provider,
      endpoint: main.slug,
      answeredBy: Object.fromEntries(data.questions.map((q, i) => [q.name, answered[i].slug])),
      attempts,
    };
    const candidate = data.candidates.find((c) => c.slug === main.slug);
    const outcome = await this.deps.generations.finish(data.generationId, {
      status: 'completed',
      cost,
      result: payload,
      usage,
      model: candidate?.model,
      provider: main.provider,
      finalEndpointSlug: main.slug,
      finishReason: 'stop',
      // Every upstream call: one per question plus the failed ones.
      attemptsCount: answered.length + attempts.length,
      latencyMs: queueTimeMs + generationTimeMs,
      queueTimeMs,
      generationTimeMs,
    });
    payload.cost = outcome.charged.toFixed(10); // what was charged is what the reply shows
    await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
  }

  /** One question through the endpoints in plan order. */
  private async answer(data: SystemoneJobData, q: SystemoneJobData['questions'][number], attempts: QuestionAttempt[], signal?: AbortSignal): Promise<Answered | Unanswered> {
    const scheme = schemeOf(q.type, q.labels);
    for (const candidate of data.candidates) {
      if (signal?.aborted) return { ok: false };
      const resolved = endpointBySlug(this.deps.catalog, candidate.slug);
      const adapter = resolved && adapterFor(resolved.provider.kind);
      if (!resolved || !adapter?.text) {
        attempts.push({ question: q.name, provider: resolved?.provider.id ?? candidate.slug, endpoint: candidate.slug, reason: 'unavailable', message: 'no text adapter for this endpoint' });
        continue;
      }
      const started = Date.now();
      try {
        const req = requestFor(q.request, resolved.endpoint.upstreamModel, candidate);
        const spec = adapter.text.buildRequest(req, resolved.provider.apiKey ?? '', { defaultMaxOutputTokens: resolved.endpoint.maxOutputTokens });
        // Per-provider concurrency caps apply to each question's call (32 questions are 32 upstream calls).
        const reply = await this.deps.limiter.run(resolved.provider, () =>
          this.deps.upstream.request(resolved.provider.baseUrl, spec, { timeoutMs: resolved.provider.timeoutMs, extractError: adapter.extractError, signal }),
        );
        const result = adapter.text.parseResponse(reply.json);
        if (!result.logprobs?.length) throw noLogprobs('the reply carries no log-probabilities');
        const answer = readAnswer(scheme, result.logprobs);
        if (!answer) throw noLogprobs(`none of the answer tokens (${scheme.tokens.join(', ')}) is among the top log-probabilities`);
        const finished = Date.now();
        this.deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: 'ok' });
        this.deps.stats.record(candidate.slug, { ok: true, at: finished, ttftMs: finished - started });
        return {
          ok: true,
          answer,
          usage: result.usage,
          cost: tokenCost(resolved.endpoint.price, result.usage),
          slug: candidate.slug,
          provider: resolved.provider.id,
          model: result.modelVersion ?? candidate.model,
        };
      } catch (e) {
        if (signal?.aborted) return { ok: false };
        const failure: UpstreamFailure = isUpstreamError(e) ? e.failure : { reason: 'malformed_reply', message: `unreadable reply: ${(e as Error).message}`, fallback: true };
        attempts.push({ question: q.name, provider: resolved.provider.id, endpoint: candidate.slug, reason: failure.reason, status: failure.status, message: failure.message });
        this.deps.metrics.providerAttempts.inc({ provider: resolved.provider.id, outcome: failure.reason });
        const retryAfterMs = isUpstreamError(e) ? e.retryAfterMs : undefined;
        const at = Date.now();
        this.deps.stats.record(candidate.slug, { ok: false, at, ...(retryAfterMs !== undefined && { retryUntil: at + retryAfterMs }) });
        this.deps.logger.warn('provider attempt failed', { generationId: data.generationId, question: q.name, endpoint: candidate.slug, reason: failure.reason, status: failure.status, trace_id: data.traceId });
        if (!failure.fallback) return { ok: false, fatal: failure };
      }
    }
    return { ok: false };
  }

  private async fail(data: SystemoneJobData, attempts: QuestionAttempt[], fatal: UpstreamFailure | undefined, pub: GenerationPublisher, queueTimeMs: number, generationTimeMs: number) {
    const last = attempts[attempts.length - 1];
    const err =
      fatal?.reason === 'bad_request'
        ? new AppError('BAD_REQUEST', `The provider refused the request: ${fatal.message}`, {
            metadata: { reason: 'provider_error', raw: fatal.raw ?? fatal.message, provider_name: last?.provider, attempts },
          })
        : AppError.fromReason(
            'all_providers_failed',
            attempts.length ? `Every provider failed: ${[...new Set(attempts.map((a) => `${a.provider} (${a.reason})`))].join(', ')}` : 'No provider could take the request',
            { attempts, raw: fatal?.raw ?? last?.message, provider_name: last?.provider },
          );
    const error = { code: err.code, status: err.status, message: err.message, metadata: err.metadata };
    await this.deps.generations.finish(data.generationId, { status: 'failed', error, attemptsCount: attempts.length, queueTimeMs, generationTimeMs });
    await pub.send({ type: 'failed', error });
  }
}

function requestFor(base: Omit<TextRequest, 'model'>, upstreamModel: string, candidate: PlannedCandidate): TextRequest {
  const req: TextRequest = { ...base, model: upstreamModel };
  for (const p of candidate.dropParams) for (const f of PARAM_FIELDS[p] ?? []) delete req[f];
  return req;
}

/** The endpoint that answered the most questions; on a tie the earlier one in plan order. */
function mainEndpoint(answered: Answered[], candidates: PlannedCandidate[]): Answered {
  const count = new Map<string, number>();
  for (const a of answered) count.set(a.slug, (count.get(a.slug) ?? 0) + 1);
  const rank = (slug: string) => candidates.findIndex((c) => c.slug === slug);
  return answered.reduce((best, a) => {
    const d = (count.get(a.slug) ?? 0) - (count.get(best.slug) ?? 0);
    return d > 0 || (d === 0 && rank(a.slug) < rank(best.slug)) ? a : best;
  });
}
