import type { Db } from '../../shared/db/client';
import { answerScheme, questionRequest } from '../../shared/formats/typed-questions.mapper';
import { newId } from '../../shared/ids';
import { estimateInputTokens, maxBound, textBound } from '../../shared/billing/pricing';
import { ZERO } from '../../shared/money';
import { QUEUES } from '../../shared/queue/queue-names';
import type { TypedQuestionsJobData } from '../../shared/queue/job-catalog';
import type { TypedQuestionsBody } from '../../shared/schemas/typed-questions.schema';
import type { TypedQuestionsDonePayload } from '../../shared/queue/job-catalog';
import { routed, type Caller } from './generation-order';
import { awaitText, type WaitingServiceDeps } from './text-replies';
import { generationById } from '../../shared/db/generation-reads';

/**
 * Answers come from token probabilities, so an endpoint must return log-probabilities and the alternatives at
 * the answer position. The catalog's `logprobs` covers `top_logprobs` (decisions.md section 1): an endpoint
 * listing `logprobs` serves typed questions.
 */
const REQUIRED_CAPABILITIES = ['logprobs'];
/** Sent with every question; an endpoint lacking one gets the call without it (with a warning on the record). */
const REQUESTED_PARAMETERS = ['temperature'];

export interface TypedQuestionsDeps extends WaitingServiceDeps {
  db: Db;
}

/**
 * Typed questions over a state (POST /v1/systemone, decisions.md section 6), answered from top log-probabilities:
 * route to an endpoint with log-probabilities, bound every question's prompt, reserve and enqueue one job through
 * the gateway, wait for the answers.
 */
export class TypedQuestionsService {
  constructor(private readonly d: TypedQuestionsDeps) {}

  async ask(c: Caller, body: TypedQuestionsBody): Promise<{ id: string; payload: TypedQuestionsDonePayload }> {
    const route = await this.d.planner.plan({
      principal: c.principal,
      model: body.model,
      provider: body.provider,
      requestedParameters: REQUESTED_PARAMETERS,
      requireCapabilities: REQUIRED_CAPABILITIES,
      modelType: 'chat',
    });

    const questions: TypedQuestionsJobData['questions'] = Object.entries(body.questions).map(([name, q]) => {
      const scheme = answerScheme(q);
      return { name, type: q.type, labels: scheme.labels, request: questionRequest(body.state, q, scheme) };
    });
    // One reservation for the whole request: every prompt, one output token each and a request fee each,
    // on the dearest candidate (a question may fall back to it).
    const promptTokens = questions.map((q) => estimateInputTokens(q.request));
    const bound = maxBound(route.endpoints, (e) => promptTokens.reduce((sum, tokens) => sum.plus(textBound(e.price, tokens, 1)), ZERO));

    const submission = await this.d.gateway.order<TypedQuestionsJobData>({
      queue: QUEUES.text,
      id: newId('gen'),
      caller: c,
      requestType: 'chat',
      apiType: 'systemone',
      mode: 'sync',
      ...routed(route),
      request: body,
      recordWarnings: route.plan.warnings,
      bound,
      job: () => ({ apiType: 'systemone', mode: 'sync', questions }),
    });
    const payload = await awaitText<TypedQuestionsDonePayload>(this.d.gateway, submission, this.d.syncWaitMs, async () => {
      const g = await generationById(this.d.db, submission.id, (where) => this.d.db.generation.findFirst({ where }));
      return g?.status === 'completed' ? (g.result as unknown as TypedQuestionsDonePayload) : null;
    });
    return { id: submission.id, payload };
  }
}
