import { textMappingOptions } from './text-executor';
import type { TokenUsage } from '../../shared/providers/provider.types';
import { UpstreamError } from '../../shared/providers/upstream-error';
import { tokenCost } from '../../shared/billing/pricing';
import { ZERO, type Decimal } from '../../shared/money';
import { requestWithout } from '../../shared/formats/format-utils';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { JobLock } from '../../shared/queue/job-lock';
import type { PlannedCandidate, QuestionAttempt, TypedQuestionsDonePayload, TypedQuestionsJobData, TextJobData } from '../../shared/queue/job-catalog';
import { readAnswer, schemeOf, type TypedAnswer } from '../../shared/formats/typed-questions.mapper';
import type { WorkerDeps } from '../worker-deps';
import { endGeneration } from '../../shared/billing/ending';
import { endFailed, endStopped, runAttempts, upstreamRequest, type Attempt, type EndpointCall, type RunTiming } from './attempt-loop';
import { failureError } from './attempt-failures';
import type { GenAiUsage } from '../../shared/telemetry/tracing';

interface Answered {
  answer: TypedAnswer;
  usage: TokenUsage;
  cost: Decimal;
  slug: string;
  provider: string;
  model: string;
}

const noLogprobs = (message: string): UpstreamError => new UpstreamError({ reason: 'malformed_reply', message, fallback: true });

/**
 * Runs a typed-question job: every question concurrently, each trying the planned endpoints in order until one
 * returns log-probabilities that cover an allowed answer token (a reply without them is a failed attempt, so a
 * provider without log-probabilities is skipped). The generation settles once, with the summed cost, and
 * fails as a whole (charging nothing) when any question stays unanswered.
 */
export class TypedQuestionsExecutor {
  constructor(private readonly deps: WorkerDeps) {}

  /** `signal` aborts every question's upstream call when the generation is cancelled or timed out. */
  async run(data: TypedQuestionsJobData, timing: { enqueuedAt: number; startedAt: number }, signal?: AbortSignal, lock?: JobLock): Promise<void> {
    const pub = new GenerationPublisher(this.deps.redis, data.replyTo, data.generationId, this.deps.lane.buses, lock);
    const run: RunTiming = { queueTimeMs: Math.max(0, timing.startedAt - timing.enqueuedAt), startedAt: timing.startedAt };
    const { queueTimeMs } = run;
    const attempts: QuestionAttempt[] = [];
    const outcomes = await Promise.all(data.questions.map((q) => this.answer(data, q, attempts, signal)));
    const generationTimeMs = Math.max(0, this.deps.clock().getTime() - timing.startedAt);
    // Cancelled or timed out: nobody receives the answers, the generation ends cancelled and uncharged.
    if (signal?.aborted) return endStopped(this.deps, pub, data, attempts, run);

    const answered = outcomes.filter((o): o is Answered => !('fatal' in o));
    if (answered.length < outcomes.length) {
      // The failure that ended a question's loop (a 400: the same input fails everywhere), if any did.
      const fatal = outcomes.map((o) => ('fatal' in o ? o.fatal : undefined)).find((f) => f !== undefined);
      return endFailed(this.deps, pub, data, failureError(this.deps, attempts, fatal), attempts, run);
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
    const payload: TypedQuestionsDonePayload = {
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
    // What is charged is what the reply shows.
    await endGeneration(this.deps, pub, data, {
      kind: 'answer',
      payload,
      finish: {
        status: 'completed',
        cost,
        result: payload,
        usage,
        model: candidate?.model,
        provider: main.provider,
        finalEndpointSlug: main.slug,
        routing: { attempts, answeredBy: payload.answeredBy },
        finishReason: 'stop',
        // Every upstream call: one per question plus the failed ones.
        attemptsCount: answered.length + attempts.length,
        latencyMs: queueTimeMs + generationTimeMs,
        queueTimeMs,
        generationTimeMs,
      },
    });
  }

  /** One question through the attempt loop: the first endpoint whose log-probabilities give an answer. */
  private async answer(
    data: TypedQuestionsJobData,
    q: TypedQuestionsJobData['questions'][number],
    attempts: QuestionAttempt[],
    signal?: AbortSignal,
  ): Promise<Answered | { fatal: Parameters<typeof failureError>[2] }> {
    const scheme = schemeOf(q.type, q.labels);
    const out = await runAttempts(this.deps, data, {
      operation: 'text',
      signal,
      attempts,
      question: q.name,
      usageOf: questionUsage,
      call: async (c: EndpointCall): Promise<Answered> => {
        const text = c.adapter.text!;
        const req = requestWithout(q.request, c.resolved.endpoint.upstreamModel, c.candidate.dropParams);
        const spec = text.buildRequest(req, c.resolved.provider.apiKey ?? '', textMappingOptions(c.resolved));
        // Per-provider concurrency caps apply to each question's call (32 questions are 32 upstream calls).
        const result = text.parseResponse((await upstreamRequest(this.deps, c, spec, c.signal)).json);
        if (!result.logprobs?.length) throw noLogprobs('the reply carries no log-probabilities');
        const answer = readAnswer(scheme, result.logprobs);
        if (!answer) throw noLogprobs(`none of the answer tokens (${scheme.tokens.join(', ')}) is among the top log-probabilities`);
        return {
          answer,
          usage: result.usage,
          cost: tokenCost(c.resolved.endpoint.price, result.usage),
          slug: c.candidate.slug,
          provider: c.resolved.provider.id,
          model: result.modelVersion ?? c.candidate.model,
        };
      },
    });
    if (out.kind === 'answered') return out.value;
    return { fatal: out.kind === 'failed' && out.last && !out.last.fallback ? out.last : undefined };
  }
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

/** What a question's answer reports for its attempt's span (workers/services/job-spans.ts). */
function questionUsage(a: Answered): GenAiUsage {
  return { responseModel: a.model, inputTokens: a.usage.inputTokens, outputTokens: a.usage.outputTokens };
}
