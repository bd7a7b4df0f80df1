import { Router, type RequestHandler } from 'express';
import { AppError } from '../../shared/errors/app-error';
import { check } from '../../shared/schemas/ajv';
import { embeddingsInputIssues, embeddingsSchema, type EmbeddingsBody } from '../../shared/schemas/embeddings.schema';
import { buildEmbeddingList } from '../../shared/formats/embeddings.mapper';
import { embeddingUsage } from '../../shared/formats/format-utils';
import type { EmbeddingsService } from '../services/embeddings.service';
import { callerOf } from './route-helpers';

/** POST /v1/embeddings: strings, string arrays and multimodal blocks; float or base64 (little-endian float32). */
export function embeddingsRoutes(d: { guard: RequestHandler[]; embeddings: EmbeddingsService }): Router {
  const r = Router();
  r.post('/v1/embeddings', ...d.guard, async (req, res) => {
    const body = check<EmbeddingsBody>(embeddingsSchema, req.body ?? {});
    const issues = embeddingsInputIssues(body.input);
    if (issues.length) throw AppError.validation(issues);
    const { id, payload: p } = await d.embeddings.embed(callerOf(res), body);
    res.json(buildEmbeddingList({ id, model: p.model, result: p.result, encoding: body.encoding_format ?? 'float', usage: embeddingUsage(p.result.usage.inputTokens, p.cost) }));
  });
  return r;
}
