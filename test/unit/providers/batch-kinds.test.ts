import { BATCH_API_MODEL_TYPES, PROVIDER_KINDS } from '../../../shared/catalog/catalog.types';
import { adapterByKind } from '../../../shared/providers/registry';

/**
 * The catalog allows `batch` prices where BATCH_API_MODEL_TYPES says (it does not import the adapters); the adapters'
 * `batch.operations` say what their providers' batch APIs take. The two must agree (docs/batches.md "Provider batch APIs").
 */
describe('batch prices are allowed exactly where an adapter has a batch API', () => {
  const operationOf = { chat: 'text', embedding: 'embeddings' } as const;
  it.each(PROVIDER_KINDS.map((k) => [k]))('%s', (kind) => {
    const allowed = [...(BATCH_API_MODEL_TYPES[kind] ?? [])].map((t) => operationOf[t as keyof typeof operationOf]).sort();
    expect(allowed).toEqual([...(adapterByKind[kind]?.batch?.operations ?? [])].sort());
  });
});
