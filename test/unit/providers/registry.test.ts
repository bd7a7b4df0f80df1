import { adapterFor, providerAdapters } from '../../../shared/providers/registry';

describe('provider registry', () => {
  it('has one manifest per kind whose operations match what it says it supports', () => {
    for (const [kind, adapter] of Object.entries(providerAdapters)) {
      expect(adapter.kind).toBe(kind);
      expect(Boolean(adapter.text)).toBe(adapter.supports.text);
      expect(Boolean(adapter.embeddings)).toBe(adapter.supports.embeddings);
      expect(Boolean(adapter.images)).toBe(adapter.supports.images);
    }
  });

  it('answers undefined for a kind with no adapter yet', () => {
    expect(adapterFor('openai')?.kind).toBe('openai');
    expect(adapterFor('replicate')).toBeUndefined();
  });
});
