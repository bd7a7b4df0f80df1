/**
 * Provider kind → adapter manifest. New kinds are new folders plus one line here; `Partial` so a kind may
 * be declared in the catalog types before its adapter exists.
 */
import type { ProviderKind } from '../catalog/catalog.types';
import type { ProviderAdapter } from './adapter.types';
import { anthropicAdapter } from './anthropic';
import { geminiAdapter } from './gemini';
import { openaiAdapter } from './openai';
import { replicateAdapter } from './replicate';

export const providerAdapters = {
  openai: openaiAdapter,
  anthropic: anthropicAdapter,
  gemini: geminiAdapter,
  replicate: replicateAdapter,
} as const satisfies Partial<{ [K in ProviderKind]: ProviderAdapter<K> }>;

export type AdapterKind = keyof typeof providerAdapters;

/** The adapter for a catalog provider's kind (`adapterByKind[kind]`), or undefined when that kind has none yet. */
export const adapterByKind: Partial<Record<ProviderKind, ProviderAdapter>> = providerAdapters;
