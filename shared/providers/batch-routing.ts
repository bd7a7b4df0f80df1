import { endpointBySlug } from '../catalog/catalog-index';
import type { Catalog } from '../catalog/catalog.types';
import { adapterByKind } from './registry';

/** The operations a provider's batch API may take (adapter.types.ts BatchApiOperation). */
export type BatchOperation = 'text' | 'embeddings';

/**
 * Whether a line of `operation` routed first to the endpoint `slug` goes to that provider's own batch API
 * (docs/batches.md "Provider batch APIs"): the endpoint has `batch` prices and its adapter's batch API takes the
 * operation. Pure: the catalog and the adapters decide.
 */
export function takesUpstreamBatch(catalog: Catalog, operation: BatchOperation, slug: string | undefined): boolean {
  const resolved = slug ? endpointBySlug(catalog, slug) : undefined;
  if (!resolved?.endpoint.batch) return false;
  const batch = adapterByKind[resolved.provider.kind]?.batch;
  return batch !== undefined && batch.operations.includes(operation);
}
