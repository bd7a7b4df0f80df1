import { Router, type RequestHandler } from 'express';
import { parseTypedQuestionsBody } from '../../shared/schemas/typed-questions.schema';
import { moneyJson } from '../../shared/formats/format-utils';
import type { TypedQuestionsService } from '../services/typed-questions.service';
import { callerOf } from './route-helpers';

/** POST /v1/systemone: typed questions over a state, answered from top log-probabilities (decisions.md section 6). */
export function typedQuestionsRoutes(d: { guard: RequestHandler[]; questions: TypedQuestionsService }): Router {
  const r = Router();
  r.post('/v1/systemone', ...d.guard, async (req, res) => {
    const body = parseTypedQuestionsBody(req.body ?? {});
    const { id, payload: p } = await d.questions.ask(callerOf(res), body);
    res.json({
      id,
      model: p.model,
      answers: p.answers,
      usage: { input_tokens: p.usage.inputTokens, output_tokens: p.usage.outputTokens, cost_rub: moneyJson(p.cost) },
    });
  });
  return r;
}
