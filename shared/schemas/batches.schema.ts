/** Request schemas of the Batch API (decisions.md section 7: `/v1/files` with purpose `batch`, `/v1/batches`). */

/** The endpoints a batch may run, each as a line's `url` names it. */
export const BATCH_ENDPOINTS = ['/v1/responses', '/v1/chat/completions', '/v1/embeddings', '/v1/images/generations'] as const;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];

export const BATCH_STATUSES = ['validating', 'failed', 'in_progress', 'finalizing', 'completed', 'expired', 'cancelling', 'cancelled'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** Body of POST /v1/batches. OpenAI's metadata: up to 16 string pairs. */
export const createBatchSchema = {
  $id: 'CreateBatchRequest',
  type: 'object',
  required: ['input_file_id', 'endpoint', 'completion_window'],
  additionalProperties: false,
  properties: {
    input_file_id: { type: 'string', minLength: 1, maxLength: 200 },
    endpoint: { enum: BATCH_ENDPOINTS },
    completion_window: { enum: ['24h'] },
    metadata: {
      type: ['object', 'null'],
      maxProperties: 16,
      propertyNames: { maxLength: 64 },
      additionalProperties: { type: 'string', maxLength: 512 },
    },
  },
} as const;

export interface CreateBatchBody {
  input_file_id: string;
  endpoint: BatchEndpoint;
  completion_window: '24h';
  metadata?: Record<string, string> | null;
}

/** Query of GET /v1/batches (OpenAI's cursor paging, newest first). */
export const listBatchesQuerySchema = {
  $id: 'ListBatchesQuery',
  type: 'object',
  properties: {
    after: { type: 'string', minLength: 1, maxLength: 200 },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
} as const;

export interface ListBatchesQuery {
  after?: string;
  limit: number;
}

/** Query of GET /v1/files (OpenAI's: `purpose`, `after`, `limit`, `order`). */
export const listBatchFilesQuerySchema = {
  $id: 'ListBatchFilesQuery',
  type: 'object',
  properties: {
    purpose: { enum: ['batch', 'batch_output'] },
    after: { type: 'string', minLength: 1, maxLength: 200 },
    limit: { type: 'integer', minimum: 1, maximum: 10_000, default: 10_000 },
    order: { enum: ['asc', 'desc'], default: 'desc' },
  },
} as const;

export interface ListBatchFilesQuery {
  purpose?: 'batch' | 'batch_output';
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

/** The text fields of the multipart upload of POST /v1/files (the bytes are the field `file`). */
export const uploadBatchFileSchema = {
  $id: 'UploadBatchFileFields',
  type: 'object',
  required: ['purpose'],
  properties: {
    purpose: { const: 'batch' },
  },
} as const;

/** One line of an input file. */
export const batchLineSchema = {
  $id: 'BatchInputLine',
  type: 'object',
  required: ['custom_id', 'method', 'url', 'body'],
  additionalProperties: false,
  properties: {
    custom_id: { type: 'string', minLength: 1, maxLength: 512 },
    method: { const: 'POST' },
    url: { type: 'string' },
    body: { type: 'object' },
  },
} as const;

export interface BatchLine {
  custom_id: string;
  method: 'POST';
  url: string;
  body: Record<string, unknown>;
}
