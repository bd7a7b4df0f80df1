import { Router } from 'express';
import type { AppContext } from '../app-context';
import { ownerOf } from '../middleware/auth';
import { parseSystemoneBody } from '../../shared/schemas/systemone.schema';
import { answerScheme, questionRequest } from '../../shared/formats/systemone.mapper';
import { moneyJson } from '../../shared/formats/format-utils';
import { newId } from '../../shared/auth/api-keys';
import { estimateInputTokens, maxBound, textBound } from '../../shared/billing/pricing';
import { ZERO } from '../../shared/billing/money';
import { QUEUES } from '../../shared/queue/queue-names';
import type { SystemoneJobData } from '../../shared/queue/job-catalog';
import type { SystemoneDonePayload } from '../../workers/services/systemone-executor';
import { awaitText } from '../services/text-replies';

/**
 * Answers come from token probabilities, so an endpoint must return log-probabilities and the alternatives at
 * the answer position. The catalog's `logprobs` covers `top_logprobs` (decisions.md section 1): an endpoint
 * listing `logprobs` serves typed questions.
 */
const REQUIRED_CAPABILITIES = ['logprobs'];
/** Sent with every question; an endpoint lacking one gets the call without it (with a warning on the record). */
const REQUESTED_PARAMETERS = ['temperature'];

/** POST /v1/systemone: typed questions over a state, answered from top log-probabilities (decisions.md section 6). */
export function systemoneRoutes(ctx: AppContext): Router {
  const r = Router();
  r.post('/v1/systemone', ...ctx.guard, async (req, res) => {
    const body = parseSystemoneBody(req.body ?? {});
    const principal = res.locals.principal;
    const route = await ctx.planner.plan({
      principal,
      model: body.model,
      provider: body.provider,
      requestedParameters: REQUESTED_PARAMETERS,
      requireCapabilities: REQUIRED_CAPABILITIES,
      modelType: 'chat',
    });

    const questions: SystemoneJobData['questions'] = Object.entries(body.questions).map(([name, q]) => {
      const scheme = answerScheme(q);
      return { name, type: q.type, labels: scheme.labels, request: questionRequest(body.state, q, scheme) };
    });
    // One reservation for the whole request: every prompt, one output token each and a request fee each,
    // on the dearest candidate (a question may fall back to it).
    const promptTokens = questions.map((q) => estimateInputTokens(q.request));
    const bound = maxBound(route.endpoints, (e) => promptTokens.reduce((sum, tokens) => sum.plus(textBound(e.price, tokens, 1)), ZERO));

    const id = newId('gen');
    const warnings = [...route.plan.warnings];
    const submission = await ctx.gateway.submit<SystemoneJobData>(
      QUEUES.text,
      {
        id,
        ...ownerOf(principal),
        model: route.primary.id,
        unifiedModelId: route.primary.id,
        modelDisplayName: route.primary.displayName,
        requestType: 'chat',
        apiType: 'systemone',
        responseMode: 'sync',
        request: body,
        warnings: warnings.length ? warnings : undefined,
        routing: { candidates: route.candidates.map((c) => c.slug), dropped: route.plan.dropped },
        traceId: res.locals.traceId,
        bound,
        idempotency: res.locals.idempotency,
      },
      () => ({
        generationId: id,
        ...ownerOf(principal),
        candidates: route.candidates,
        warnings,
        replyTo: ctx.gateway.replyChannel,
        traceId: res.locals.traceId,
        apiType: 'systemone',
        mode: 'sync',
        questions,
      }),
      { listen: true },
    );
    const p = await awaitText<SystemoneDonePayload>(ctx.gateway, submission, ctx.config.syncWaitMs, async () => {
      const g = await ctx.db.generation.findUnique({ where: { id: submission.id } });
      return g?.status === 'completed' ? (g.result as unknown as SystemoneDonePayload) : null;
    });
    res.json({
      id: submission.id,
      model: p.model,
      answers: p.answers,
      usage: { input_tokens: p.usage.inputTokens, output_tokens: p.usage.outputTokens, cost_rub: moneyJson(p.cost) },
    });
  });
  return r;
}
