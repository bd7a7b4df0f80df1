import { countInputTokens, countTokens, producedUsage, estimateInputTokens } from '../../../shared/billing/pricing';
import { providerAdapters } from '../../../shared/providers/registry';
import type { ProviderAdapter } from '../../../shared/providers/adapter.types';
import { createAnthropicStreamParser } from '../../../shared/providers/anthropic/stream.mapper';
import { createGeminiStreamParser } from '../../../shared/providers/gemini/stream.mapper';
import { SseParser } from '../../../shared/providers/api';
import type { TextStreamParser } from '../../../shared/providers/adapter.types';
import type { InputItem } from '../../../shared/providers/provider.types';
import { sse } from '../providers/stream-helper';

const message = (...content: Extract<InputItem, { type: 'message' }>['content']): InputItem[] => [{ type: 'message', role: 'user', content }];

describe('an honest token count (what a stream cut without usage is charged)', () => {
  it('counts by script, at most what o200k_base counts (Latin 4.25 characters a token, Cyrillic 4, CJK 1.5)', () => {
    expect(countTokens('a'.repeat(4250), 'openai')).toBe(1000);
    expect(countTokens('я'.repeat(4000), 'openai')).toBe(1000);
    expect(countTokens('猫'.repeat(1500), 'openai')).toBe(1000);
    // A surrogate pair is one character.
    expect(countTokens('🙂'.repeat(10), 'openai')).toBe(5);
    expect(countTokens('', 'openai')).toBe(0);
  });

  it("counts a request's texts, not its JSON (nothing per message: at most what a provider counts), a typical image and file each", () => {
    const text = 'x'.repeat(42_500);
    const plain = countInputTokens({ input: message({ type: 'input_text', text }) }, 'openai');
    expect(plain).toBe(10_000);
    // The reservation's estimate is generous on purpose (about 3 characters a token over the JSON): not this.
    expect(estimateInputTokens({ input: message({ type: 'input_text', text }) })).toBeGreaterThan(14_000);
    const withInstructions = countInputTokens({ input: message({ type: 'input_text', text: 'hi' }), instructions: 'y'.repeat(425) }, 'openai');
    expect(withInstructions).toBe(1 + 100);
    const images = countInputTokens({ input: message({ type: 'input_image', image_url: 'https://x/a.png', detail: 'low' }, { type: 'input_image', image_url: 'https://x/b.png' }) }, 'openai');
    expect(images).toBe(85 + 765);
    expect(countInputTokens({ input: message({ type: 'input_file', file_url: 'https://x/a.pdf' }) }, 'openai')).toBe(1_500);
  });

  it("takes the provider's usage first: final, then what it reported so far, then the count", () => {
    const request = { input: message({ type: 'input_text', text: 'x'.repeat(425) }) };
    const final = { inputTokens: 7, outputTokens: 8 };
    expect(producedUsage({ final, soFar: { inputTokens: 1 }, outputWeight: 3.2, request, family: 'openai' })).toBe(final);
    expect(producedUsage({ soFar: { inputTokens: 777, cachedTokens: 500 }, outputWeight: 3.2, request, family: 'anthropic' })).toEqual({ inputTokens: 777, outputTokens: 4, cachedTokens: 500 });
    expect(producedUsage({ soFar: { inputTokens: 777, outputTokens: 9 }, outputWeight: 3.2, request, family: 'gemini' })).toEqual({ inputTokens: 777, outputTokens: 9 });
    expect(producedUsage({ outputWeight: 3.2, request, family: 'openai' })).toEqual({ inputTokens: 100, outputTokens: 4 });
  });

  it("counts by each text adapter's own tokenizer (an OpenAI-compatible provider's is OpenAI's)", () => {
    const families = Object.fromEntries(Object.entries(providerAdapters).map(([kind, a]) => [kind, (a as ProviderAdapter).text?.tokenizer ?? null]));
    expect(families).toEqual({ openai: 'openai', anthropic: 'anthropic', gemini: 'gemini', replicate: null });
  });
});

describe('the usage a stream parser reports before its end', () => {
  const feed = (parser: TextStreamParser, transcript: string) => {
    const sseParser = new SseParser();
    for (const event of sseParser.push(Buffer.from(transcript))) parser.push(event);
    return parser.usageSoFar!();
  };

  it("Anthropic: the input at message_start (its output count is a placeholder until message_delta)", () => {
    const parser = createAnthropicStreamParser();
    expect(parser.usageSoFar!()).toBeUndefined();
    const start = sse([
      ['message_start', { type: 'message_start', message: { model: 'claude', usage: { input_tokens: 472, cache_read_input_tokens: 1000, cache_creation_input_tokens: 0, output_tokens: 1 } } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } }],
    ]);
    expect(feed(parser, start)).toEqual({ inputTokens: 1472, cachedTokens: 1000 });
    const delta = sse([['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 89 } }]]);
    expect(feed(parser, delta)).toEqual({ inputTokens: 1472, cachedTokens: 1000, outputTokens: 89 });
  });

  it('Gemini: the prompt on every chunk, and the output once a chunk counts it', () => {
    const parser = createGeminiStreamParser();
    const chunk = (usageMetadata: object) => sse([{ candidates: [{ content: { parts: [{ text: 'Hi' }] } }], usageMetadata }]);
    expect(feed(parser, chunk({ promptTokenCount: 777, totalTokenCount: 777 }))).toEqual({ inputTokens: 777 });
    expect(feed(parser, chunk({ promptTokenCount: 777, candidatesTokenCount: 12, totalTokenCount: 789 }))).toEqual({ inputTokens: 777, outputTokens: 12 });
  });
});
