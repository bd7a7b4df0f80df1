import { adapterByKind, providerAdapters } from '../../../shared/providers/registry';

describe('provider registry', () => {
  it('has one manifest per kind whose operations match what it says it supports', () => {
    for (const [kind, adapter] of Object.entries(providerAdapters)) {
      expect(adapter.kind).toBe(kind);
      expect(Boolean(adapter.text)).toBe(adapter.supports.text);
      expect(Boolean(adapter.embeddings)).toBe(adapter.supports.embeddings);
      expect(Boolean(adapter.images)).toBe(adapter.supports.images);
    }
  });

  it('has an adapter for every provider kind of the catalog, and none for an unknown kind', () => {
    for (const kind of ['openai', 'anthropic', 'gemini', 'replicate'] as const) expect(adapterByKind[kind]?.kind).toBe(kind);
    expect(adapterByKind['acme' as never]).toBeUndefined();
  });
});
