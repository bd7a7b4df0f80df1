import { EXAMPLE_ORIGIN, EXAMPLE_TIME as T, type OperationExamples } from './examples';

/** Examples of stored files, images and media. */

const FILE_ID = 'file_01JDQ3W9X1Y3Z5A7B9C1D3E5F7';
const storedFile = {
  id: FILE_ID,
  fileType: 'IMAGE',
  mimeType: 'image/png',
  source: 'USER_UPLOAD',
  storagePolicy: 'TEMP_UPLOAD',
  url: `${EXAMPLE_ORIGIN}/v1/files/${FILE_ID}/content?exp=1795525200&sig=3q2-7wF0`,
  size: 48213,
  createdAt: T,
  updatedAt: T,
  externalUserId: 'customer-42',
  expiresAt: '2026-11-25T12:00:00.000Z',
};
/** Replies as the service gives them (recorded from the demo catalog; test/api/openapi-examples-live.test.ts keeps them true). */
const imageResult = {
  created: 1795521600,
  data: [
    {
      url: `${EXAMPLE_ORIGIN}/v1/files/${FILE_ID}/content?exp=1795525200&sig=3q2-7wF0kQx`,
      revised_prompt: 'A lighthouse at dawn, watercolor'
    }
  ],
  usage: {
    input_units: 0,
    output_units: 1,
    input_tokens: 8,
    output_tokens: 272,
    total_tokens: 280,
    cost_rub: 4.2,
    cost: 4.2
  }
};
const mediaPending = {
  id: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  object: 'media.generation',
  status: 'pending',
  created: 1795521600,
  model: 'kwaivgi/kling-v2.1',
  taskId: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3'
};
const mediaCompleted = {
  id: 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3',
  object: 'media.generation',
  status: 'completed',
  created: 1795521600,
  model: 'kwaivgi/kling-v2.1',
  completed_at: 1795521724,
  data: {
    url: `${EXAMPLE_ORIGIN}/v1/files/${FILE_ID}/content?exp=1795525200&sig=3q2-7wF0kQx`,
    mime_type: 'video/mp4',
    file_id: 'file_01JDQ3W9X1Y3Z5A7B9C1D3E5F7',
    duration_seconds: 5
  },
  usage: { input_units: 0, output_units: 1, duration_seconds: 5, cost_rub: 140, cost: 140 }
};

export const MEDIA_EXAMPLES: Record<string, OperationExamples> = {
  'GET /v1/storage/files': { query: { page: 1, limit: 20 }, response: { data: [storedFile], meta: { page: 1, limit: 20, total: 1, totalPages: 1 } } },
  'POST /v1/storage/files': { query: { storagePolicy: 'TEMP_UPLOAD', externalUserId: 'customer-42' }, response: storedFile },
  'GET /v1/storage/files/{id}': { response: storedFile },
  'PATCH /v1/storage/files/{id}': { request: { storagePolicy: 'PERMANENT' }, response: { ...storedFile, storagePolicy: 'PERMANENT', expiresAt: null } },
  'DELETE /v1/storage/files/{id}': { response: { success: true } },
  'GET /v1/files/{id}/content': { response: '(the file bytes)' },

  'POST /v2/images/generations': {
    request: { model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor', n: 1, size: '1024x1024' },
    response: imageResult,
  },
  'POST /v1/images/generations': {
    request: { model: 'openai/gpt-image-1', prompt: 'A lighthouse at dawn, watercolor', n: 1, size: '1024x1024' },
    response: imageResult,
  },
  'POST /v1/media': {
    request: { model: 'kwaivgi/kling-v2.1', input: { prompt: 'A paper boat drifting down a rainy street', aspect_ratio: '16:9' }, async: true },
    response: mediaPending,
  },
  'GET /v1/media/{id}': { response: mediaCompleted },
  'GET /v2/media/{id}': { response: mediaCompleted },
  'POST /v1/media/{id}/operations': { request: { operation: 'upscale_1080p', async: true }, response: { ...mediaPending, id: 'gen_01JDQ3X4Y6Z8A0B2C4D6E8F0G2', taskId: 'gen_01JDQ3X4Y6Z8A0B2C4D6E8F0G2', model: 'topazlabs/video-upscale' } },
  'POST /v1/media/{id}/cancel': { response: { ...mediaPending, status: 'cancelled' } },
};
