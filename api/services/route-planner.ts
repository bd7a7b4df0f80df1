import { createHash } from 'node:crypto';
import type { Catalog, EndpointConfig, ModelConfig, ModelType } from '../../shared/catalog/catalog.types';
import { AppError } from '../../shared/errors/app-error';
import { applyModelSpec, parseModelSpec, type ModelSpec } from '../../shared/routing/inline-model';
import { planRoute } from '../../shared/routing/plan-route';
import { RoutingError, RoutingInputError } from '../../shared/routing/routing-errors';
import type { ProviderPreferences, RoutePlan } from '../../shared/routing/routing.types';
import type { PlannedCandidate } from '../../shared/queue/job-catalog';
import type { EndpointStatsStore } from '../../shared/services/endpoint-stats.store';
import { assertModelAllowed, type Principal } from '../../shared/auth/principal';
import { catalogModelId } from '../../shared/catalog/catalog-index';

export interface PlanRequest {
  principal: Principal;
  model?: string;
  models?: string[];
  /** The first model parsed already (`RoutePlanner.spec`). */
  spec?: ModelSpec;
  provider?: ProviderPreferences;
  requestedParameters?: string[];
  modelType: ModelType | ModelType[];
  requireCapabilities?: string[];
  /** prompt_cache_key or session_id: requests sharing it stick to one endpoint. */
  stickiness?: string;
  /** The request's `service_tier` (PlanRouteInput.serviceTier). */
  serviceTier?: string;
}

export interface PlannedRoute {
  spec: ModelSpec;
  primary: ModelConfig;
  plan: RoutePlan;
  candidates: PlannedCandidate[];
  endpoints: EndpointConfig[];
  stickyKey?: string;
}

/** Translates routing failures to our errors (decisions.md section 3). */
export function routingFailure(e: unknown): never {
  if (e instanceof RoutingInputError) throw AppError.validation([{ path: `/${e.field.replace(/\./g, '/')}`, message: e.message }], e.message);
  if (e instanceof RoutingError) throw AppError.fromReason(e.reason, e.message, e.candidates.length ? { candidates: e.candidates } : {});
  throw e;
}

/** The routing step every generation route shares: model spec, permissions, stickiness, the plan. */
export class RoutePlanner {
  constructor(
    private readonly catalog: Catalog,
    private readonly stats: EndpointStatsStore,
  ) {}

  /** The first model of a request (`model`, else `models[0]`) split into its id and inline options; 400 when bad. */
  spec(r: Pick<PlanRequest, 'model' | 'models'>): ModelSpec {
    try {
      const first = r.model ?? r.models?.[0];
      if (!first) throw new RoutingInputError('model', 'model is required');
      const spec = parseModelSpec(first, { isKnownModel: (id) => Object.hasOwn(this.catalog.models, id) });
      return { ...spec, model: this.modelId(spec.model) };
    } catch (e) {
      return routingFailure(e);
    }
  }

  /** A model id as the catalog spells it: a bare id (`o4-mini`) names the one catalog model of that name. */
  private modelId(id: string): string {
    const found = typeof id === 'string' ? catalogModelId(this.catalog, id) : undefined;
    if (found && 'candidates' in found) {
      throw new RoutingError('model_not_found', `Model '${id}' is ambiguous: name one of ${found.candidates.join(', ')}`, [], id);
    }
    return found?.id ?? id;
  }

  async plan(r: PlanRequest): Promise<PlannedRoute> {
    const spec = r.spec ?? this.spec(r);
    try {
      const models = [...new Set([spec.model, ...(r.models ?? []).map((m) => this.modelId(m))])];
      for (const m of models) assertModelAllowed(r.principal, m);
      const preferences = applyModelSpec(r.provider, spec);
      const slugs = models.flatMap((m) => (Object.hasOwn(this.catalog.models, m) ? this.catalog.models[m].endpoints.map((e) => e.slug) : []));
      const stickyKey = r.stickiness ? `${r.principal.organizationId}:${createHash('sha256').update(r.stickiness).digest('hex').slice(0, 32)}` : undefined;
      const sticky = stickyKey ? ((await this.stats.sticky(stickyKey)) ?? undefined) : undefined;
      const plan = planRoute({
        catalog: this.catalog,
        models,
        preferences,
        requestedParameters: r.requestedParameters,
        modelType: r.modelType,
        stats: this.stats.snapshot(slugs),
        sticky,
        requireCapabilities: r.requireCapabilities,
        serviceTier: r.serviceTier,
      });
      return {
        spec,
        primary: this.catalog.models[spec.model],
        plan,
        candidates: plan.candidates.map((c) => ({ model: c.model, slug: c.endpoint.slug, dropParams: plan.unsupportedByEndpoint[c.endpoint.slug] ?? [] })),
        endpoints: plan.candidates.map((c) => c.endpoint),
        stickyKey,
      };
    } catch (e) {
      return routingFailure(e);
    }
  }
}
