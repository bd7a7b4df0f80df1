import { createHash } from 'node:crypto';
import type { Catalog, EndpointConfig, ModelConfig, ModelType } from '../../shared/catalog/catalog.types';
import { AppError } from '../../shared/errors/app-error';
import { applyModelSpec, parseModelSpec, type ModelSpec } from '../../shared/routing/inline-model';
import { chooseEndpoints, planFromChoices, type RouteChoices } from '../../shared/routing/plan-route';
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

/** How many request shapes (first model, fallbacks, routing object, parameters) a planner remembers; past it the oldest goes. */
const REMEMBERED = 256;
/** A shape spelled longer than this (a long routing object) is planned afresh each time rather than remembered. */
const LONGEST_SHAPE = 1024;

/** What the catalog decides for one request shape: its models, their endpoints' slugs, the plan before health. */
interface ShapeChoices {
  models: string[];
  slugs: string[];
  choices: RouteChoices;
}

/**
 * The routing step every generation route shares: model spec, permissions, stickiness, the plan.
 *
 * The part of a plan that the request and the catalog alone decide (plan-route.ts chooseEndpoints) is made once per
 * request shape and kept, a bounded few; permissions, statistics and stickiness are read for every request. The
 * catalog is never changed in place (a new one is a new planner: shared/runtime/bootstrap.ts), so what is kept stays
 * true. Only a success is kept: a refused request is refused afresh each time.
 */
export class RoutePlanner {
  /** Per first model as sent: its spec, for models of the catalog. */
  private readonly specs = new Map<string, ModelSpec>();
  private readonly shapes = new Map<string, ShapeChoices>();

  constructor(
    private readonly catalog: Catalog,
    private readonly stats: EndpointStatsStore,
  ) {}

  /** The first model of a request (`model`, else `models[0]`) split into its id and inline options; 400 when bad. */
  spec(r: Pick<PlanRequest, 'model' | 'models'>): ModelSpec {
    const first = r.model ?? r.models?.[0];
    const known = first === undefined ? undefined : this.specs.get(first);
    if (known) return known;
    try {
      if (!first) throw new RoutingInputError('model', 'model is required');
      const parsed = parseModelSpec(first, { isKnownModel: (id) => Object.hasOwn(this.catalog.models, id) });
      const spec = { ...parsed, model: this.modelId(parsed.model) };
      if (Object.hasOwn(this.catalog.models, spec.model)) remember(this.specs, first, spec);
      return spec;
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
      const shape = JSON.stringify([spec, r.models, r.provider, r.requestedParameters, r.modelType, r.requireCapabilities, r.serviceTier]);
      const known = this.shapes.get(shape);
      const models = known?.models ?? [...new Set([spec.model, ...(r.models ?? []).map((m) => this.modelId(m))])];
      for (const m of models) assertModelAllowed(r.principal, m);
      const chosen = known ?? this.choose(shape, models, spec, r);
      const stickyKey = r.stickiness ? `${r.principal.organizationId}:${createHash('sha256').update(r.stickiness).digest('hex').slice(0, 32)}` : undefined;
      const sticky = stickyKey ? ((await this.stats.sticky(stickyKey)) ?? undefined) : undefined;
      const plan = planFromChoices(chosen.choices, { stats: this.stats.snapshot(chosen.slugs), sticky });
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

  /** The catalog's part of the plan of a request shape not met yet (or forgotten), kept for the next. */
  private choose(shape: string, models: string[], spec: ModelSpec, r: PlanRequest): ShapeChoices {
    const choices = chooseEndpoints({
      catalog: this.catalog,
      models,
      preferences: applyModelSpec(r.provider, spec),
      requestedParameters: r.requestedParameters,
      modelType: r.modelType,
      requireCapabilities: r.requireCapabilities,
      serviceTier: r.serviceTier,
    });
    const slugs = models.flatMap((m) => (Object.hasOwn(this.catalog.models, m) ? this.catalog.models[m].endpoints.map((e) => e.slug) : []));
    const chosen = { models, slugs, choices };
    remember(this.shapes, shape, chosen);
    return chosen;
  }
}

/** Keeps `value` under `key` unless the key is too long; the oldest entry goes when `memo` is full. */
function remember<T>(memo: Map<string, T>, key: string, value: T): void {
  if (key.length > LONGEST_SHAPE) return;
  if (memo.size >= REMEMBERED) memo.delete(memo.keys().next().value as string);
  memo.set(key, value);
}
