/** OpenAI and every OpenAI-compatible API: chat completions, embeddings, image generations; the Batch API. */
import type { ProviderAdapter } from '../adapter.types';
import { buildChatCompletionRequest, buildEmbeddingRequest, buildImageRequest } from './request.mapper';
import { extractOpenAIError, parseChatCompletion, parseEmbeddings, parseImages } from './response.mapper';
import { createOpenAIStreamParser } from './stream.mapper';
import { openaiBatch } from './batch.mapper';

export const openaiAdapter: ProviderAdapter<'openai'> = {
  kind: 'openai',
  supports: { text: true, textStream: true, embeddings: true, images: true, logprobs: true, structuredOutput: true, embeddingTokens: true },
  extractError: extractOpenAIError,
  text: {
    buildRequest: buildChatCompletionRequest,
    parseResponse: parseChatCompletion,
    createStreamParser: createOpenAIStreamParser,
  },
  embeddings: { buildRequest: buildEmbeddingRequest, parseResponse: parseEmbeddings },
  images: { buildRequest: buildImageRequest, parseResponse: parseImages },
  batch: openaiBatch,
};
