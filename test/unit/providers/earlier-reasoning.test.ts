/**
 * Earlier reasoning given back in the input (docs/clients.md "Upstream fidelity"): an upstream Responses API takes it as
 * given; every other request leaves it out, with one warning, and is still one its provider accepts.
 */
import { RequestChecker } from '../../../fakes/request-check';
import { adapterByKind } from '../../../shared/providers/registry';
import type { TextRequest } from '../../../shared/providers/provider.types';

const checker = new RequestChecker();
const request = (model: string): TextRequest => ({
  model,
  input: [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather?' }] },
    { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Secret thought.' }], encrypted_content: 'ZW5jcnlwdGVk' },
    { type: 'reasoning', summary: [], encrypted_content: 'bW9yZQ==' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Sunny.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tomorrow?' }] },
  ],
  maxOutputTokens: 100,
  stream: false,
});

describe('earlier reasoning in the input', () => {
  it.each([
    ['openai', 'gpt-4.1', 'openai', 'POST /chat/completions'],
    ['anthropic', 'claude-sonnet-4', 'anthropic', 'POST /messages'],
    ['gemini', 'gemini-2.5-flash', 'gemini', 'generateContent'],
  ] as const)('is left out of a %s request that has no place for it, with one warning', (kind, model, set, operation) => {
    const spec = adapterByKind[kind]!.text!.buildRequest(request(model), 'k');
    expect(JSON.stringify(spec.body)).not.toMatch(/Secret thought|ZW5jcnlwdGVk|bW9yZQ==/);
    expect(JSON.stringify(spec.body)).toMatch(/Sunny\./);
    expect(spec.warnings).toEqual([`earlier reasoning (2 input items) was left out of the call to ${model}: only an endpoint that speaks the Responses API takes it`]);
    expect(checker.check(set, operation, spec.body)).toBeUndefined();
  });

  it('goes to an endpoint that speaks the Responses API as given, without a warning', () => {
    const spec = adapterByKind['openai']!.text!.buildRequest(request('o4-mini'), 'k', { responsesApi: true });
    expect(JSON.stringify(spec.body)).toMatch(/ZW5jcnlwdGVk.*bW9yZQ==/);
    expect(spec.warnings).toBeUndefined();
  });
});
