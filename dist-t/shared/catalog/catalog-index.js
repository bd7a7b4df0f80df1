"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.endpointBySlug = endpointBySlug;
const indexes = new WeakMap();
/** The endpoint behind a slug (`<model>:<provider>`), with its model and provider. */
function endpointBySlug(catalog, slug) {
    let index = indexes.get(catalog);
    if (!index) {
        index = new Map();
        for (const model of Object.values(catalog.models)) {
            for (const endpoint of model.endpoints) {
                const provider = catalog.providers[endpoint.provider];
                if (provider)
                    index.set(endpoint.slug, { model, endpoint, provider });
            }
        }
        indexes.set(catalog, index);
    }
    return index.get(slug);
}
