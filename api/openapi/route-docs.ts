/**
 * Every HTTP route of the API, one row each: the source of `GET /openapi.json` and `GET /docs`.
 * `test/api/openapi.test.ts` fails when a route exists without a row or a row without a route, so add the
 * row in the same change as the route. `body` and `query` are the very ajv schemas the route validates with
 * (import them from `shared/schemas/*.schema.ts`); never a copy.
 */
import { imageGenerationSchema } from '../../shared/schemas/images.schema';
import { mediaCreateSchema, mediaOperationSchema } from '../../shared/schemas/media.schema';
import { createKeySchema, updateKeySchema } from '../../shared/schemas/keys.schema';
import { responsesSchema } from '../../shared/schemas/responses.schema';
import { inputItemsQuerySchema, retrieveResponseQuerySchema } from '../../shared/schemas/responses-query.schema';
import { chatSchema } from '../../shared/schemas/chat.schema';
import { embeddingsSchema } from '../../shared/schemas/embeddings.schema';
import { typedQuestionsSchema } from '../../shared/schemas/typed-questions.schema';
import { listFilesQuerySchema, storedFileSchema, updateFileSchema, uploadOptionsSchema } from '../../shared/schemas/storage.schema';
import { historyDetailSchema, historyPageSchema, historyQuerySchema } from '../../shared/schemas/history.schema';
import { createBatchSchema, listBatchesQuerySchema, listBatchFilesQuerySchema } from '../../shared/schemas/batches.schema';
import {
  apiKeyListSchema,
  apiKeyRecordSchema,
  balanceV1Schema,
  balanceV2Schema,
  healthSchema,
  keyInfoSchema,
  readinessSchema,
  revokedKeySchema,
  signedInSchema,
  memberSchema,
  memberListSchema,
  removedMemberSchema,
  activitySchema,
} from './response-schemas';
import { activityQuerySchema } from '../../shared/schemas/activity.schema';
import { createMemberSchema, updateMemberSchema } from '../../shared/schemas/members.schema';
import { loginSchema, redeemTokenSchema } from '../../shared/schemas/auth.schema';

/** A JSON Schema as our schema modules declare them (`as const` object literals). */
export type JsonSchema = { readonly [k: string]: unknown };

/**
 * Who may call: `key` an API key, `token` a personal-account token, `any` either of the two,
 * `metrics` the METRICS_TOKEN when set, `operator` an operator token (`switchyard operator token issue`, as the bearer
 * header or the dashboard's `sy_admin` cookie; api/routes/dashboard.route.ts refuses organization tokens of every role
 * and API keys), `none` open.
 */
export type RouteAuth = 'key' | 'token' | 'any' | 'metrics' | 'operator' | 'none';

export interface RouteResponse {
  /** Status of the success reply; 200 by default. */
  status?: number;
  description: string;
  schema?: JsonSchema;
  /** `application/json` by default; `text/event-stream` for streams, `text/html`, `text/plain`... */
  contentType?: string | string[];
}

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI style: `/v1/media/{id}`. */
  path: string;
  tag: string;
  summary: string;
  auth: RouteAuth;
  description?: string;
  /** Request body: the ajv schema the handler validates with (its `$id` names the component). */
  body?: JsonSchema;
  /** Content types of the body when not (only) JSON, e.g. uploads. */
  bodyContentTypes?: string[];
  /** Query parameters: the ajv object schema the handler validates `req.query` with. */
  query?: JsonSchema;
  response: string | RouteResponse;
  /** Error statuses worth naming beyond the generic ones (400 with a body or query, 401 with auth, 429). */
  errors?: number[];
  deprecated?: boolean;
}

/**
 * The routes that create a generation: each takes an `Idempotency-Key` header (docs/idempotency.md), documented as
 * a header parameter with its 409. `test/api/openapi.test.ts` checks that every one is a row above.
 */
export const IDEMPOTENT_ROUTES: ReadonlySet<string> = new Set([
  'post /v1/responses',
  'post /v1/chat/completions',
  'post /v1/embeddings',
  'post /v1/systemone',
  'post /v2/images/generations',
  'post /v1/images/generations',
  'post /v1/media',
  'post /v1/media/{id}/operations',
]);

const json = (description: string, schema?: JsonSchema, status?: number): RouteResponse => ({ description, schema, status });

export const ROUTE_DOCS: RouteDoc[] = [
  // Operations
  { method: 'get', path: '/healthz', tag: 'Operations', auth: 'none', summary: 'Check liveness', description: 'The process is up.', response: json('Always ok while the process runs', healthSchema) },
  { method: 'get', path: '/readyz', tag: 'Operations', auth: 'none', summary: 'Check readiness', description: 'Database, Redis and workers are reachable.', response: json('Ready; 503 with the same body when a check fails', readinessSchema), errors: [503] },
  { method: 'get', path: '/metrics', tag: 'Operations', auth: 'metrics', summary: 'Get Prometheus metrics', description: 'Requests, latency, queue depth, jobs, providers and money, in Prometheus text format.', response: { description: 'Prometheus text exposition format', contentType: 'text/plain' } },
  { method: 'get', path: '/openapi.json', tag: 'Operations', auth: 'none', summary: 'Get the OpenAPI document', description: 'This OpenAPI 3.1 document. Its server, code samples and example URLs name the origin it was fetched from (`PUBLIC_BASE_URL` when set).', response: json('The OpenAPI document') },
  { method: 'get', path: '/docs', tag: 'Operations', auth: 'none', summary: 'Open the API reference', description: 'This API reference (HTML), rendered in the browser by the bundled Scalar reference, with search and "try it".', response: { description: 'HTML page', contentType: 'text/html' } },
  { method: 'get', path: '/docs/assets/{file}', tag: 'Operations', auth: 'none', summary: 'Get a script of the reference page', description: 'Served by Switchyard itself (no CDN).', response: { description: 'JavaScript', contentType: 'text/javascript' }, errors: [404] },
  { method: 'get', path: '/console', tag: 'Operations', auth: 'none', summary: 'Open the console', description: 'The personal account in the browser (docs/console.md): sign-in, balance, activity, history, keys, members, batches, files and a playground. The page holds no data; it reads everything from this API with the `sy_session` cookie. Sent with a Content-Security-Policy that allows no inline script and nothing from another origin.', response: { description: 'HTML page', contentType: 'text/html' }, errors: [503] },
  { method: 'get', path: '/console/{rest}', tag: 'Operations', auth: 'none', summary: 'Open a page of the console', description: 'Any path under /console (`/console/keys`, `/console/invite#token=...`) answers the same page; the console shows the section the path names.', response: { description: 'HTML page', contentType: 'text/html' }, errors: [503] },
  { method: 'get', path: '/console/assets/{file}', tag: 'Operations', auth: 'none', summary: "Get a file of the console", description: 'The built script, style sheet and icon (names carry a content hash), brotli- or gzip-compressed as the browser accepts.', response: { description: 'JavaScript, CSS or SVG', contentType: 'text/javascript' }, errors: [404] },
  { method: 'get', path: '/admin/login', tag: 'Operations', auth: 'none', summary: 'Log in to the queue dashboard', description: 'Browser login to the queue dashboard: `?token=<operator token>` (from `switchyard operator token issue`) sets the HttpOnly `sy_admin` cookie and redirects to `/admin/queues/`. Organization tokens of every role and API keys are refused (403).', response: { status: 302, description: 'Redirect to /admin/queues with the `sy_admin` cookie set' }, errors: [401, 403] },

  // Account
  { method: 'get', path: '/v1/key', tag: 'Account', auth: 'key', summary: 'Get the calling API key', description: 'Info of the calling API key: its limit and usage.', response: json('Key info record', keyInfoSchema), errors: [400] },
  { method: 'get', path: '/v1/balance', tag: 'Account', auth: 'any', summary: 'Get the balance (version 1)', description: 'Deprecated: use `GET /v2/balance`.', deprecated: true, response: json('Balance record version 1; `Deprecation: true` and `Link: </v2/balance>; rel="successor-version"`', balanceV1Schema) },
  { method: 'get', path: '/v2/balance', tag: 'Account', auth: 'any', summary: 'Get the balance', description: 'Organization balance, reserve, spend and the remaining key and member limits.', response: json('Balance record version 2', balanceV2Schema) },

  // Sign-in (decisions.md section 8)
  { method: 'post', path: '/v1/auth/login', tag: 'Sign-in', auth: 'none', summary: 'Sign in', description: 'E-mail and password to a browser session: sets the `sy_session` cookie (HttpOnly, SameSite=Lax). A wrong password and an unknown e-mail are the same 401. After 5 failures for one e-mail within 15 minutes (50 for one client address), attempts answer 429 with Retry-After until the window passes. A foreign Origin: 403.', body: loginSchema, response: json('The person, its organization and the session\'s CSRF token', signedInSchema), errors: [401, 403, 429] },
  { method: 'post', path: '/v1/auth/invite', tag: 'Sign-in', auth: 'none', summary: 'Accept an invite', description: 'The token of an invite link and a password (10 to 256 characters): sets the password and signs in, as login. A used, expired or unknown token: 401; a bad password: 400, and the token stays usable.', body: redeemTokenSchema, response: json('As login', signedInSchema), errors: [401, 403] },
  { method: 'post', path: '/v1/auth/reset', tag: 'Sign-in', auth: 'none', summary: 'Reset a password', description: 'The token of a reset link (1 hour) and a new password: ends every session of the person, sets the password and signs in, as login.', body: redeemTokenSchema, response: json('As login', signedInSchema), errors: [401, 403] },
  { method: 'get', path: '/v1/auth/session', tag: 'Sign-in', auth: 'token', summary: 'Get the session', description: 'The login answer of the session cookie; 401 when it has ended (12 hours idle, 7 days, logout, a reset or removal) or the request has no session.', response: json('As login', signedInSchema) },
  { method: 'post', path: '/v1/auth/logout', tag: 'Sign-in', auth: 'token', summary: 'Sign out', description: 'Ends the session on the server (its cookie then gets 401) and clears the cookie. Needs X-CSRF-Token.', response: { status: 204, description: 'Signed out' }, errors: [403] },

  // Activity (decisions.md section 8)
  { method: 'get', path: '/v1/activity', tag: 'Account', auth: 'any', summary: 'Get activity', description: 'Spend, requests and tokens by day x model x endpoint over the last 30 days (or `days`, 1 to 90) including the current one, days from 01:00 Moscow time; `date` picks one day of the window (another: 400). An API key sees its own activity; a member its own and its keys\'; owner and admin the organization\'s, filtered by `api_key_id` or `user_id` (of another organization: 404). Read from totals kept as generations end.', query: activityQuerySchema, response: json('Activity items', activitySchema), errors: [403, 404] },

  // Members (decisions.md section 8)
  { method: 'get', path: '/v1/members', tag: 'Members', auth: 'token', summary: 'List members', description: 'Owner and admin: every member of the organization; a member: itself.', response: json('Members', memberListSchema), errors: [403] },
  { method: 'post', path: '/v1/members', tag: 'Members', auth: 'token', summary: 'Invite a member', description: 'Creates the member (status `invited`) and answers its invite link (works once, for 7 days). Owner: any role; admin: admin or member; member: 403. An e-mail already in use: 409.', body: createMemberSchema, response: json('The member with inviteToken and inviteUrl', memberSchema, 201), errors: [403, 409] },
  { method: 'patch', path: '/v1/members/{id}', tag: 'Members', auth: 'token', summary: 'Change a member', description: 'Its role and personal limit. An admin never touches an owner nor makes one; nobody changes their own role (403); the last owner cannot be demoted (409). The change is seen on the member\'s next request.', body: updateMemberSchema, response: json('The member', memberSchema), errors: [403, 404, 409] },
  { method: 'delete', path: '/v1/members/{id}', tag: 'Members', auth: 'token', summary: 'Remove a member', description: 'Ends its sessions and revokes its keys for good; it signs in no more. An admin never removes an owner (403); the last owner cannot be removed (409).', response: json('The removed member id', removedMemberSchema), errors: [403, 404, 409] },

  // Keys
  { method: 'post', path: '/v1/keys', tag: 'Keys', auth: 'token', summary: 'Create an API key', description: 'The key itself is shown once, in this reply.', body: createKeySchema, response: json('The key record with `key`', apiKeyRecordSchema, 201), errors: [403] },
  { method: 'get', path: '/v1/keys', tag: 'Keys', auth: 'token', summary: 'List API keys', description: 'Owner and admin: every key of the organization; member: its own.', response: json('Key records', apiKeyListSchema), errors: [403] },
  { method: 'patch', path: '/v1/keys/{id}', tag: 'Keys', auth: 'token', summary: 'Update an API key', description: 'Change a key\'s name, limit, models, rate limit or `disabled`. A member only tightens what an owner or admin set; a revoked key is final (409).', body: updateKeySchema, response: json('The key record', apiKeyRecordSchema), errors: [403, 404, 409] },
  { method: 'delete', path: '/v1/keys/{id}', tag: 'Keys', auth: 'token', summary: 'Revoke an API key', description: 'Revokes the key for good.', response: json('The revoked key id', revokedKeySchema), errors: [403, 404] },

  // Text
  { method: 'post', path: '/v1/responses', tag: 'Text', auth: 'any', summary: 'Create a response', description: 'Generate a response (OpenAI Responses API): `stream: true` for Server-Sent Events, `background: true` to queue it.', body: responsesSchema, response: { description: 'Response object, or an SSE stream of response.* events', contentType: ['application/json', 'text/event-stream'] }, errors: [402, 403, 404, 408, 502] },
  { method: 'get', path: '/v1/responses/{id}', tag: 'Text', auth: 'any', summary: 'Get a response', description: 'Read a stored or background response; `stream=true` streams a background response again (live while it runs) from `starting_after`.', query: retrieveResponseQuerySchema, response: { description: 'Response object, or an SSE stream of response.* events with sequence_number', contentType: ['application/json', 'text/event-stream'] }, errors: [404] },
  { method: 'get', path: '/v1/responses/{id}/input_items', tag: 'Text', auth: 'any', summary: 'List a response\'s input items', description: 'A response\'s own input items (OpenAI list: `order` desc by default, `after` an item id, `limit` 1-100).', query: inputItemsQuerySchema, response: 'List object: `data` (input items with ids), `first_id`, `last_id`, `has_more`', errors: [404] },
  { method: 'post', path: '/v1/responses/{id}/cancel', tag: 'Text', auth: 'any', summary: 'Cancel a response', description: 'Cancel a queued or running background response (its reservation is released; a stream that already sent text is charged for what was produced, shown in `usage`); one that ended otherwise is a 400.', response: 'Response object with status `cancelled`', errors: [404] },
  { method: 'delete', path: '/v1/responses/{id}', tag: 'Text', auth: 'any', summary: 'Delete a response', description: 'Delete a stored response\'s conversation and answer (the billing and history record stays).', response: 'Deleted object `{id, object: "response", deleted: true}`', errors: [404] },
  { method: 'post', path: '/v1/chat/completions', tag: 'Text', auth: 'any', summary: 'Create a chat completion', description: 'Chat completion in OpenAI\'s shape; `stream: true` for SSE chunks.', body: chatSchema, response: { description: 'chat.completion object, or an SSE stream of chat.completion.chunk', contentType: ['application/json', 'text/event-stream'] }, errors: [402, 403, 404, 408, 502] },
  { method: 'post', path: '/v1/embeddings', tag: 'Embeddings', auth: 'any', summary: 'Create embeddings', description: 'Embeddings of up to 2048 inputs (text or multimodal blocks).', body: embeddingsSchema, response: 'Embedding result (`object: list`)', errors: [402, 403, 404, 408, 502] },
  { method: 'post', path: '/v1/systemone', tag: 'Typed questions', auth: 'any', summary: 'Answer typed questions', description: 'Answer up to 32 typed questions (`noul`, `choice`, `score`) about a state, from the model\'s token probabilities.', body: typedQuestionsSchema, response: 'Typed-question answer: `id`, `model`, `answers` by question name, `usage`', errors: [402, 403, 404, 408, 502] },
  { method: 'get', path: '/v1/models', tag: 'Models', auth: 'any', summary: 'List models', description: 'Models of the catalog with their endpoints and prices.', response: 'List of models (OpenAI shape plus `endpoints`)' },
  { method: 'get', path: '/v1/models/{id}', tag: 'Models', auth: 'any', summary: 'Get a model', description: 'One model; the id may contain slashes (`openai/gpt-4.1-mini`).', response: 'Model', errors: [404] },

  // History
  { method: 'get', path: '/v1/history/generations', tag: 'History', auth: 'any', summary: 'List generations', description: 'API key: its own; owner and admin: the organization; member: its keys and its own. `apiKeyId` and `withoutApiKey`: tokens only.', query: historyQuerySchema, response: json('Page of history items with `meta`; `X-Total-Is-Estimate: true` when `total` is estimated', historyPageSchema) },
  { method: 'get', path: '/v1/history/generations/{id}', tag: 'History', auth: 'any', summary: 'Get a generation', description: 'One generation in detail, with its routing decision.', response: json('History detail record', historyDetailSchema), errors: [404] },

  // Storage
  { method: 'get', path: '/v1/storage/files', tag: 'Storage', auth: 'any', summary: 'List stored files', description: '`scope=others`: owner and admin tokens only.', query: listFilesQuerySchema, response: 'Object with `data` (stored files) and `meta` (paging)', errors: [403] },
  { method: 'post', path: '/v1/storage/files', tag: 'Storage', auth: 'any', summary: 'Upload a file', description: 'Upload an image, video or audio file: the raw body with its Content-Type (options in the query), or multipart with the field `file` (options as fields).', bodyContentTypes: ['image/*', 'video/*', 'audio/*', 'multipart/form-data'], query: uploadOptionsSchema, response: json('The stored-file record', storedFileSchema, 201), errors: [413] },
  { method: 'get', path: '/v1/storage/files/{id}', tag: 'Storage', auth: 'any', summary: 'Get a stored file', response: json('The stored-file record', storedFileSchema), errors: [404] },
  { method: 'patch', path: '/v1/storage/files/{id}', tag: 'Storage', auth: 'any', summary: 'Update a stored file', description: 'Change `storagePolicy` or `externalUserId`.', body: updateFileSchema, response: json('The stored-file record', storedFileSchema), errors: [403, 404] },
  { method: 'delete', path: '/v1/storage/files/{id}', tag: 'Storage', auth: 'any', summary: 'Delete a stored file', response: '`{"success": true}`', errors: [403, 404] },
  { method: 'get', path: '/v1/files/{id}/content', tag: 'Storage', auth: 'any', summary: 'Download a file', description: 'The file\'s bytes: a stored file (`Range` supported), or a batch file (`file-...`: its JSONL). The `url` of a stored file carries `?sig=` and needs no Authorization (for `<img>` and `<video>` tags); without `sig` an API key or token of the file\'s organization is needed. A wrong signature is 404.', response: { description: 'The bytes, with the file\'s Content-Type; 206 for a Range', contentType: 'application/octet-stream' }, errors: [404, 416] },

  // Batches
  { method: 'post', path: '/v1/files', tag: 'Batches', auth: 'any', summary: 'Upload a batch file', description: 'Upload a batch input file: multipart `file` (JSONL, at most 50,000 lines and 100 MiB, streamed to storage) and `purpose: "batch"`.', bodyContentTypes: ['multipart/form-data'], response: 'OpenAI file object (`id` file-..., `object: file`, `bytes`, `created_at`, `filename`, `purpose`, `expires_at`)', errors: [413] },
  { method: 'get', path: '/v1/files', tag: 'Batches', auth: 'any', summary: 'List batch files', description: 'List batch files (inputs and the output and error files of batches), scoped like the history.', query: listBatchFilesQuerySchema, response: 'List object: `data` (file objects), `first_id`, `last_id`, `has_more`' },
  { method: 'get', path: '/v1/files/{id}', tag: 'Batches', auth: 'any', summary: 'Get a batch file', description: 'One batch file.', response: 'OpenAI file object', errors: [404] },
  { method: 'delete', path: '/v1/files/{id}', tag: 'Batches', auth: 'any', summary: 'Delete a batch file', description: 'Delete a batch file (not the input of a batch that has not ended: 409).', response: '`{id, object: "file", deleted: true}`', errors: [404, 409] },
  { method: 'post', path: '/v1/batches', tag: 'Batches', auth: 'any', summary: 'Create a batch', description: 'Create a batch: every line of the input file runs as one generation of `endpoint`, in the background, within 24 h.', body: createBatchSchema, response: 'OpenAI batch object (`status: validating`), with `usage.cost_rub`', errors: [400] },
  { method: 'get', path: '/v1/batches', tag: 'Batches', auth: 'any', summary: 'List batches', description: 'List batches, newest first (`after` a batch id, `limit` 1-100).', query: listBatchesQuerySchema, response: 'List object: `data` (batch objects), `first_id`, `last_id`, `has_more`' },
  { method: 'get', path: '/v1/batches/{id}', tag: 'Batches', auth: 'any', summary: 'Get a batch', description: 'One batch: status, request_counts, errors, output_file_id and error_file_id, usage.cost_rub.', response: 'OpenAI batch object', errors: [404] },
  { method: 'post', path: '/v1/batches/{id}/cancel', tag: 'Batches', auth: 'any', summary: 'Cancel a batch', description: 'Cancel a batch: lines not started never run; running lines finish and are charged; then `cancelled` with the files of what ran.', response: 'OpenAI batch object (`cancelling` or `cancelled`)', errors: [404, 409] },

  // Media
  { method: 'post', path: '/v2/images/generations', tag: 'Media', auth: 'any', summary: 'Generate images', description: 'OpenAI images API shape; synchronous up to `SYNC_WAIT_MS`, then the pending body.', body: imageGenerationSchema, response: { status: 200, description: 'Image generation result; 202 with the pending body (`id`, `status: pending`, `model`, `created`, `taskId`) and `Retry-After` when it outlasts SYNC_WAIT_MS (poll GET /v1/media/{id})' }, errors: [402, 403, 404, 409, 502] },
  { method: 'post', path: '/v1/images/generations', tag: 'Media', auth: 'any', summary: 'Generate images (v1 path)', description: 'The same as `POST /v2/images/generations`, for SDKs pointed at the v1 root.', body: imageGenerationSchema, response: { status: 200, description: 'Image generation result; 202 with the pending body when it outlasts SYNC_WAIT_MS' }, errors: [402, 403, 404, 409, 502] },
  { method: 'post', path: '/v1/media', tag: 'Media', auth: 'any', summary: 'Generate an image, video or audio', description: '`async: true` answers at once; unsupported input fields are reported in `warnings`.', body: mediaCreateSchema, response: { status: 200, description: 'Media generation record once ended (a failure is `status: failed` with `error`); 202 with `Retry-After` while pending or processing' }, errors: [402, 403, 404] },
  { method: 'get', path: '/v1/media/{id}', tag: 'Media', auth: 'any', summary: 'Get a media generation', description: 'Read a media generation record (`Retry-After` while it runs: 3 s images, 5 s video and audio).', response: 'Media generation record', errors: [404] },
  { method: 'get', path: '/v2/media/{id}', tag: 'Media', auth: 'any', summary: 'Get a media generation (v2 path)', description: 'The same as `GET /v1/media/{id}`.', response: 'Media generation record', errors: [404] },
  { method: 'post', path: '/v1/media/{id}/operations', tag: 'Media', auth: 'any', summary: 'Run an operation on a generation', description: '`extend` (asynchronous, new generation with model `pending`), `upscale_1080p`, `upscale_4k`.', body: mediaOperationSchema, response: { status: 200, description: 'Media generation record of the new generation; 202 while it runs, or the source record as `processing` (uncharged) while the source is still being prepared' }, errors: [402, 404, 409] },
  { method: 'post', path: '/v1/media/{id}/cancel', tag: 'Media', auth: 'any', summary: 'Cancel a media generation', description: 'Cancel a pending or processing generation (upstream task cancelled, reservation released).', response: 'Media generation record with `status: cancelled`; 409 `not_cancellable` once it has ended', errors: [404, 409] },
];
