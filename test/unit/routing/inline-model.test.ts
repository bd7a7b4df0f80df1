import { applyModelSpec, parseModelSpec } from '../../../shared/routing/inline-model';
import { RoutingInputError } from '../../../shared/routing/routing-errors';

function inputError(fn: () => unknown): RoutingInputError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(RoutingInputError);
    return e as RoutingInputError;
  }
  throw new Error('expected a RoutingInputError');
}

describe('parseModelSpec', () => {
  it('passes a plain model id through', () => {
    expect(parseModelSpec('openai/gpt-4.1-mini')).toEqual({ model: 'openai/gpt-4.1-mini' });
  });

  it('parses every option', () => {
    expect(parseModelSpec('openai/gpt-4.1-mini@provider=acme&reasoning_effort=high&allow_fallbacks=false')).toEqual({
      model: 'openai/gpt-4.1-mini',
      provider: { order: ['acme'] },
      reasoningEffort: 'high',
      allowFallbacks: false,
    });
  });

  it('parses options alone and in any order', () => {
    expect(parseModelSpec('m@allow_fallbacks=TRUE')).toEqual({ model: 'm', allowFallbacks: true });
    expect(parseModelSpec('m@reasoning_effort=Low&provider=beta')).toEqual({
      model: 'm',
      provider: { order: ['beta'] },
      reasoningEffort: 'low',
    });
    expect(parseModelSpec('m@provider=my%20cloud')).toEqual({ model: 'm', provider: { order: ['my cloud'] } });
  });

  it('keeps a known id that contains @ and splits at the last @', () => {
    expect(parseModelSpec('vendor/claude@2024', { isKnownModel: (id) => id === 'vendor/claude@2024' })).toEqual({
      model: 'vendor/claude@2024',
    });
    expect(parseModelSpec('vendor/claude@2024@provider=acme')).toEqual({
      model: 'vendor/claude@2024',
      provider: { order: ['acme'] },
    });
  });

  it.each([
    ['unknown option', 'm@region=eu', /Unknown routing option 'region'/],
    ['option without value', 'm@provider', /no value/],
    ['empty value', 'm@provider=', /no value/],
    ['blank value', 'm@provider=%20', /no value/],
    ['bad boolean', 'm@allow_fallbacks=yes', /Bad allow_fallbacks/],
    ['bad reasoning effort', 'm@reasoning_effort=extreme', /Bad reasoning_effort/],
    ['repeated option', 'm@provider=a&provider=b', /given twice/],
    ['empty option', 'm@provider=a&&allow_fallbacks=true', /Empty routing option/],
    ['trailing &', 'm@provider=a&', /Empty routing option/],
    ['nothing after @', 'm@', /No routing options/],
    ['no model before @', '@provider=a', /Model is missing/],
    ['malformed escape', 'm@provider=%E0%A4%A', /malformed/],
    ['empty model', '', /non-empty/],
  ])('rejects %s', (_name, model, message) => {
    const err = inputError(() => parseModelSpec(model));
    expect(err.field).toBe('model');
    expect(err.message).toMatch(message);
  });

  it('names a custom field in errors', () => {
    expect(inputError(() => parseModelSpec('m@x=1', { field: 'models[1]' })).field).toBe('models[1]');
  });
});

describe('applyModelSpec', () => {
  it('inline provider replaces order and inline allow_fallbacks wins; other fields are kept', () => {
    const prefs = { order: ['beta', 'gamma'], sort: 'price' as const, allow_fallbacks: true };
    const out = applyModelSpec(prefs, parseModelSpec('m@provider=acme&allow_fallbacks=false'));
    expect(out).toEqual({ order: ['acme'], sort: 'price', allow_fallbacks: false });
    expect(prefs.order).toEqual(['beta', 'gamma']);
  });

  it('leaves the routing object alone without inline options', () => {
    expect(applyModelSpec(undefined, parseModelSpec('m'))).toEqual({});
    expect(applyModelSpec({ only: ['acme'] }, parseModelSpec('m@reasoning_effort=low'))).toEqual({ only: ['acme'] });
  });
});
