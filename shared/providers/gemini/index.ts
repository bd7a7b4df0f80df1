/** Google Gemini API: generateContent, streamGenerateContent, batchEmbedContents. */
import type { ProviderAdapter } from '../adapter.types';
import { buildBatchEmbedRequest, buildGenerateContentRequest } from './request.mapper';
import { extractGeminiError, parseBatchEmbed, parseGenerateContent } from './response.mapper';
import { createGeminiStreamParser } from './stream.mapper';

export const geminiAdapter: ProviderAdapter<'gemini'> = {
  kind: 'gemini',
  supports: { text: true, textStream: true, embeddings: true, images: false, logprobs: true, structuredOutput: true },
  extractError: extractGeminiError,
  text: {
    tokenizer: 'gemini',
    buildRequest: buildGenerateContentRequest,
    parseResponse: parseGenerateContent,
    createStreamParser: createGeminiStreamParser,
  },
  embeddings: { buildRequest: buildBatchEmbedRequest, parseResponse: parseBatchEmbed },
};
