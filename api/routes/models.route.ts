import { Router } from 'express';
import type { AppContext } from '../app-context';
import { AppError } from '../../shared/errors/app-error';
import type { ModelConfig } from '../../shared/catalog/catalog.types';
import { catalogModelId } from '../../shared/catalog/catalog-index';

const CREATED = 1_767_225_600; // 2026-01-01: catalog entries carry no date of their own

/** GET /v1/models (and /v1/models/{id}) in OpenAI's shape, with our catalog details alongside. */
export function modelsRoutes(ctx: AppContext): Router {
  const r = Router();
  const view = (m: ModelConfig) => ({
    id: m.id,
    object: 'model' as const,
    created: CREATED,
    owned_by: m.id.split('/')[0],
    name: m.displayName,
    type: m.type,
    endpoints: m.endpoints.map((e) => ({ provider: e.provider, pricing: e.price, supports: e.supports, context_length: e.contextLength ?? null, region: ctx.catalog.providers[e.provider]?.region ?? null })),
  });
  r.get('/v1/models', ...ctx.guard, (_req, res) => {
    res.json({ object: 'list', data: Object.values(ctx.catalog.models).map(view) });
  });
  // Model ids contain slashes (`openai/gpt-4.1-mini`): the id is the rest of the path.
  r.get('/v1/models/*id', ...ctx.guard, (req, res) => {
    const raw = req.params.id as unknown;
    const id = Array.isArray(raw) ? raw.join('/') : String(raw);
    const found = catalogModelId(ctx.catalog, id);
    const m = found && 'id' in found ? ctx.catalog.models[found.id] : undefined;
    if (!m) {
      const named = found && 'candidates' in found ? `: it is ambiguous, name one of ${found.candidates.join(', ')}` : ' not found';
      throw new AppError('NOT_FOUND', `Model ${id}${named}`, { metadata: { reason: 'model_not_found' } });
    }
    res.json(view(m));
  });
  return r;
}
