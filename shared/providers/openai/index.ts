/** OpenAI and every OpenAI-compatible API: chat completions (or the Responses API), embeddings, image generations; the Batch API. */
import type { ProviderAdapter } from '../adapter.types';
import { buildChatCompletionRequest, buildEmbeddingRequest, buildImageRequest, buildResponsesRequest } from './request.mapper';
import { extractOpenAIError, parseChatCompletion, parseEmbeddings, parseImages } from './response.mapper';
import { createOpenAIStreamParser, parseResponsesResponse } from './stream.mapper';
import { openaiBatch } from './batch.mapper';
import { isRecord } from '../mapper-utils';

export const openaiAdapter: ProviderAdapter<'openai'> = {
  kind: 'openai',
  supports: { text: true, textStream: true, embeddings: true, images: true, logprobs: true, structuredOutput: true, embeddingTokens: true },
  extractError: extractOpenAIError,
  text: {
    tokenizer: 'openai',
    // An endpoint with `responsesApi` speaks the Responses API; its replies are told apart by their shape (a Responses
    // API response object's `object` is `response`, a chat completion's `chat.completion`).
    buildRequest: (req, apiKey, options) => (options?.responsesApi ? buildResponsesRequest(req, apiKey) : buildChatCompletionRequest(req, apiKey)),
    parseResponse: (json) => (isRecord(json) && json.object === 'response' ? parseResponsesResponse(json) : parseChatCompletion(json)),
    createStreamParser: createOpenAIStreamParser,
  },
  embeddings: { buildRequest: buildEmbeddingRequest, parseResponse: parseEmbeddings },
  images: { buildRequest: buildImageRequest, parseResponse: parseImages },
  batch: openaiBatch,
};
