import { chatUsage, embeddingUsage, publicUsage } from '../../../shared/formats/format-utils';
import type { TokenUsage } from '../../../shared/providers/provider.types';

const tokens: TokenUsage = { inputTokens: 1200, outputTokens: 300, cachedTokens: 1000, cacheWriteTokens: 50, reasoningTokens: 120, audioInputTokens: 7, audioOutputTokens: 3 };

describe('publicUsage', () => {
  it('carries tokens under both naming schemes, the details and the cost rounded to 6 places', () => {
    const usage = publicUsage(tokens, { totalRub: '0.12345675', inferenceRub: '0.1234567', serverToolsRub: '0.00000005' });
    expect(usage).toEqual({
      input_tokens: 1200,
      output_tokens: 300,
      total_tokens: 1500,
      prompt_tokens: 1200,
      completion_tokens: 300,
      input_tokens_details: { cached_tokens: 1000, cache_write_tokens: 50, audio_tokens: 7, video_tokens: 0 },
      prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 50, audio_tokens: 7, video_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 120, audio_tokens: 3, image_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 120, audio_tokens: 3, image_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      server_tool_use: { web_search_requests: 0 },
      server_tool_use_details: { web_search_requests: 0, tool_calls_requested: 0, tool_calls_executed: 0, steps: 0 },
      cost_rub: 0.123457,
      cost: 0.123457,
      cost_details: { inference_cost_rub: 0.123457, server_tools_cost_rub: 0 },
    });
  });

  it('fills absent details with zeros and adds plugin reports', () => {
    const plugins = { masker: { operations: [{ operation: 'mask', latency_ms: 3, cost_rub: 0 }] }, total_cost_rub: 0 };
    const usage = publicUsage({ inputTokens: 10, outputTokens: 5 }, { totalRub: '2', inferenceRub: '2' }, { plugins, pluginPostProcessError: false });
    expect(usage.input_tokens_details).toEqual({ cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0, video_tokens: 0 });
    expect(usage.output_tokens_details.reasoning_tokens).toBe(0);
    expect(usage.cost_details).toEqual({ inference_cost_rub: 2, server_tools_cost_rub: 0 });
    expect(usage.plugins).toEqual(plugins);
    expect(usage.plugin_post_process_error).toBe(false);
  });
});

describe('chatUsage and embeddingUsage', () => {
  it('chat usage has the chat names and the cost', () => {
    expect(chatUsage(tokens, { totalRub: '1.0000004' })).toEqual({
      prompt_tokens: 1200,
      completion_tokens: 300,
      total_tokens: 1500,
      prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 50, audio_tokens: 7, video_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 120, audio_tokens: 3, image_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
      cost_rub: 1,
      cost: 1,
    });
  });

  it('embedding usage counts input tokens only', () => {
    expect(embeddingUsage(42, '0.0004205')).toEqual({ prompt_tokens: 42, total_tokens: 42, cost_rub: 0.000421, cost: 0.000421 });
  });
});
