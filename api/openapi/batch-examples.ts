import type { OperationExamples } from './examples';

/** Examples of the Batch API's operations (docs/batches.md), spread into EXAMPLES. */
const BATCH = 'batch_01JDQ4A2B3C4D5E6F7G8H9J0K1';
const created = 1795525200;
const inputFile = { id: 'file-4Fq7ZbL1mN8pQ2rS6tV9wX3y', object: 'file', bytes: 1843, created_at: created, filename: 'requests.jsonl', purpose: 'batch', expires_at: null, status: 'processed' };
const batch = {
  id: BATCH,
  object: 'batch',
  endpoint: '/v1/chat/completions',
  errors: null,
  input_file_id: inputFile.id,
  completion_window: '24h',
  status: 'completed',
  output_file_id: 'file-8Hk2MnP4qR6sT8uV0wX2yZ4a',
  error_file_id: 'file-1Bc3De5Fg7Hi9Jk1Lm3No5Pq',
  created_at: created,
  in_progress_at: created + 1,
  expires_at: created + 86_400,
  finalizing_at: created + 42,
  completed_at: created + 43,
  failed_at: null,
  expired_at: null,
  cancelling_at: null,
  cancelled_at: null,
  request_counts: { total: 10, completed: 9, failed: 1 },
  metadata: { job: 'nightly-eval' },
  usage: { cost_rub: 0.01854 },
};

export const BATCH_EXAMPLES: Record<string, OperationExamples> = {
  'POST /v1/files': { response: inputFile },
  'GET /v1/files': { query: { purpose: 'batch', limit: 20, order: 'desc' }, response: { object: 'list', data: [inputFile], first_id: inputFile.id, last_id: inputFile.id, has_more: false } },
  'GET /v1/files/{id}': { response: inputFile },
  'DELETE /v1/files/{id}': { response: { id: inputFile.id, object: 'file', deleted: true } },
  'POST /v1/batches': {
    request: { input_file_id: inputFile.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { job: 'nightly-eval' } },
    response: { ...batch, status: 'validating', output_file_id: null, error_file_id: null, in_progress_at: null, finalizing_at: null, completed_at: null, request_counts: { total: 0, completed: 0, failed: 0 }, usage: { cost_rub: 0 } },
  },
  'GET /v1/batches': { query: { limit: 20 }, response: { object: 'list', data: [batch], first_id: BATCH, last_id: BATCH, has_more: false } },
  'GET /v1/batches/{id}': { response: batch },
  'POST /v1/batches/{id}/cancel': { response: { ...batch, status: 'cancelling', output_file_id: null, error_file_id: null, finalizing_at: null, completed_at: null, cancelling_at: created + 20, request_counts: { total: 10, completed: 4, failed: 0 }, usage: { cost_rub: 0.00824 } } },
};
