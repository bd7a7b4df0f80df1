/** Replicate and any API of the same asynchronous prediction shape: video, audio, upscale and hosted image models. */
import type { ProviderAdapter } from '../adapter.types';
import { buildCancelPrediction, buildCreatePrediction, buildGetPrediction } from './request.mapper';
import { extractReplicateError, parsePrediction } from './response.mapper';

export const replicateAdapter: ProviderAdapter<'replicate'> = {
  kind: 'replicate',
  supports: { text: false, textStream: false, embeddings: false, images: false, logprobs: false, structuredOutput: false, media: true },
  extractError: extractReplicateError,
  media: { buildCreate: buildCreatePrediction, buildGet: buildGetPrediction, buildCancel: buildCancelPrediction, parseTask: parsePrediction },
};
