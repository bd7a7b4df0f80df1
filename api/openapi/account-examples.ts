import { EXAMPLE_TIME as T, type OperationExamples } from './examples';

/** Examples of the service's own routes (health, metrics, the reference), of keys, balances and history. */

const T2 = '2026-11-24T12:00:02.000Z';
const GEN = 'gen_01JDQ3V2K8M4T6P9R2W5Y7Z1A3';
const KEY_ID = 'key_01JDQ3TZ2B4C6D8E0F2G4H6J8K';
const usage = { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 };
const keyRecord = {
  id: KEY_ID,
  name: 'backend',
  label: 'sy_...a1B2c3',
  user_id: 'usr_01JDQ3SX4N6P8Q0R2S4T6U8V0W',
  creator_user_id: 'usr_01JDQ3SX4N6P8Q0R2S4T6U8V0W',
  limit: 500,
  limit_remaining: 487.25,
  limit_reset: 'monthly',
  usage: 12.75,
  allowed_models: ['openai/gpt-4.1-mini'],
  rate_limit_per_minute: 600,
  disabled: false,
  revoked_at: null,
  created_at: T,
  updated_at: T,
};
const historyItem = {
  id: GEN,
  model: 'openai/gpt-4.1-mini',
  modelDisplayName: 'GPT-4.1 mini',
  requestType: 'chat',
  provider: 'openai',
  status: 'completed',
  cost: '0.004200',
  usage,
  generationTimeMs: 812,
  createdAt: T,
  apiKeyShort: 'a1B2c3',
};

export const ACCOUNT_EXAMPLES: Record<string, OperationExamples> = {
  'GET /healthz': { response: { status: 'ok' } },
  'GET /readyz': { response: { status: 'ready', checks: { database: true, redis: true, workers: true } } },
  'GET /metrics': { response: '# HELP sy_http_requests_total HTTP requests\n# TYPE sy_http_requests_total counter\nsy_http_requests_total{method="POST",route="/v1/responses",status="200"} 42\n' },
  'GET /openapi.json': { response: { openapi: '3.1.0', info: { title: 'Switchyard API', version: '0.1.0' }, paths: {} } },
  'GET /docs': { response: '<!doctype html><html>… the reference …</html>' },
  'GET /console': { response: '<!doctype html><html lang="en">… <script type="module" src="/console/assets/app.1a2b3c4d5e.js"></script> …</html>' },
  'GET /console/{rest}': { response: '<!doctype html><html lang="en">… <script type="module" src="/console/assets/app.1a2b3c4d5e.js"></script> …</html>' },
  'GET /console/assets/{file}': { response: 'var e=…;render(h(App),document.getElementById("app"));' },
  'GET /docs/assets/{file}': { response: "Scalar.createApiReference('#app', { url: '/openapi.json' })" },
  'GET /admin/login': { response: '' },

  'GET /v1/key': {
    response: { creator_user_id: 'usr_01JDQ3SX4N6P8Q0R2S4T6U8V0W', label: 'sy_...a1B2c3', limit: 500, limit_remaining: 487.25, limit_reset: 'monthly', usage: 12.75, usage_daily: 1.5, usage_weekly: 6.25, usage_monthly: 12.75 },
  },
  'GET /v1/balance': { response: { amount: '1000.000000', available: '987.250000', reservedAmount: '0.000000', spentAmount: '12.750000', updatedAt: T } },
  'GET /v2/balance': {
    response: {
      amount: '1000.000000',
      available: '987.250000',
      reserved: '0.000000',
      spent: '12.750000',
      currency: 'RUB',
      updatedAt: T,
      key: { limit: '500.000000', limitRemaining: '487.250000', limitReset: 'monthly' },
      member: null,
    },
  },

  'POST /v1/keys': {
    request: { name: 'backend', limit: '500', limit_reset: 'monthly', allowed_models: ['openai/gpt-4.1-mini'], rate_limit_per_minute: 600 },
    response: { ...keyRecord, key: 'sy_Xk3p9QmZ2vB7nR4tW8yL1cF6hJ0dS5gA3eK9uPq2' },
  },
  'GET /v1/keys': { response: { data: [keyRecord] } },
  'PATCH /v1/keys/{id}': { request: { limit: '1000', disabled: false }, response: { ...keyRecord, limit: 1000, limit_remaining: 987.25 } },
  'DELETE /v1/keys/{id}': { response: { id: KEY_ID, revoked: true } },

  'GET /v1/history/generations': {
    query: { page: 1, limit: 20, status: 'completed', sortBy: 'createdAt', sortOrder: 'desc' },
    response: { items: [historyItem], meta: { page: 1, limit: 20, total: 1, totalPages: 1 } },
  },
  'GET /v1/history/generations/{id}': {
    response: {
      id: GEN,
      organizationId: 'org_01JDQ3S1A2B3C4D5E6F7G8H9J0',
      apiKeyId: KEY_ID,
      unifiedModelId: 'openai/gpt-4.1-mini',
      requestType: 'chat',
      apiType: 'responses',
      responseMode: 'sync',
      status: 'completed',
      finishReason: 'stop',
      finalEndpointSlug: 'openai/gpt-4.1-mini@openai',
      serviceTier: 'default',
      usage,
      clientCost: '0.004200',
      generationTimeMs: 812,
      latencyMs: 240,
      queueTimeMs: 3,
      isCancelled: false,
      createdAt: T,
      completedAt: T2,
      attemptsCount: 1,
      routing: { candidates: [{ endpoint: 'openai/gpt-4.1-mini@openai', chosen: true }] },
      warnings: [],
      error: null,
    },
  },
};
