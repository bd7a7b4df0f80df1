/** Anthropic Messages API: text and text streaming, Message Batches; no embeddings, no images, no log-probabilities. */
import type { ProviderAdapter } from '../adapter.types';
import { buildMessagesRequest } from './request.mapper';
import { extractAnthropicError, parseMessage } from './response.mapper';
import { createAnthropicStreamParser } from './stream.mapper';
import { anthropicBatch } from './batch.mapper';

export const anthropicAdapter: ProviderAdapter<'anthropic'> = {
  kind: 'anthropic',
  supports: { text: true, textStream: true, embeddings: false, images: false, logprobs: false, structuredOutput: false },
  extractError: extractAnthropicError,
  text: {
    tokenizer: 'anthropic',
    buildRequest: buildMessagesRequest,
    parseResponse: parseMessage,
    createStreamParser: createAnthropicStreamParser,
  },
  batch: anthropicBatch,
};
