"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.RoutePlanner = void 0;
exports.routingFailure = routingFailure;
const node_crypto_1 = require("node:crypto");
const app_error_1 = require("../../shared/errors/app-error");
const routing_1 = require("../../shared/routing");
const principal_1 = require("../../shared/auth/principal");
/** Translates routing failures to our errors (decisions.md section 3). */
function routingFailure(e) {
    if (e instanceof routing_1.RoutingInputError)
        throw app_error_1.AppError.validation([{ path: `/${e.field.replace(/\./g, '/')}`, message: e.message }], e.message);
    if (e instanceof routing_1.RoutingError)
        throw app_error_1.AppError.fromReason(e.reason, e.message, e.candidates.length ? { candidates: e.candidates } : {});
    throw e;
}
/** The routing step every generation route shares: model spec, permissions, stickiness, the plan. */
class RoutePlanner {
    catalog;
    stats;
    constructor(catalog, stats) {
        this.catalog = catalog;
        this.stats = stats;
    }
    async plan(r) {
        try {
            const first = r.model ?? r.models?.[0];
            if (!first)
                throw new routing_1.RoutingInputError('model', 'model is required');
            const spec = (0, routing_1.parseModelSpec)(first, { isKnownModel: (id) => Object.hasOwn(this.catalog.models, id) });
            const models = [spec.model, ...(r.models ?? []).filter((m) => m !== spec.model)];
            for (const m of models)
                (0, principal_1.assertModelAllowed)(r.principal, m);
            const preferences = (0, routing_1.applyModelSpec)(r.provider, spec);
            const slugs = models.flatMap((m) => (Object.hasOwn(this.catalog.models, m) ? this.catalog.models[m].endpoints.map((e) => e.slug) : []));
            const stickyKey = r.stickiness ? `${r.principal.organizationId}:${(0, node_crypto_1.createHash)('sha256').update(r.stickiness).digest('hex').slice(0, 32)}` : undefined;
            const sticky = stickyKey ? ((await this.stats.sticky(stickyKey)) ?? undefined) : undefined;
            const plan = (0, routing_1.planRoute)({
                catalog: this.catalog,
                models,
                preferences,
                requestedParameters: r.requestedParameters,
                modelType: r.modelType,
                stats: this.stats.snapshot(slugs),
                sticky,
                requireCapabilities: r.requireCapabilities,
            });
            return {
                spec,
                primary: this.catalog.models[spec.model],
                plan,
                candidates: plan.candidates.map((c) => ({ model: c.model, slug: c.endpoint.slug, dropParams: (0, routing_1.parametersToDrop)(plan, c.endpoint.slug) })),
                endpoints: plan.candidates.map((c) => c.endpoint),
                stickyKey,
            };
        }
        catch (e) {
            return routingFailure(e);
        }
    }
}
exports.RoutePlanner = RoutePlanner;
