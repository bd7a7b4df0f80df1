/**
 * OpenAI wire format, mounted at `/openai/v1`: chat completions, Responses API (openai-responses.ts), embeddings,
 * image generations and the model list; files and batches in openai-batches.ts. Every request is judged by OpenAI's
 * OpenAPI document and per-model rules first (openai-shared.ts `refused`).
 */
import { arr, isObj, newId, num, obj, runStream, sendJson, sse, str, strList, unixNow } from './common';
import type { Ctx, Json, WireFormat } from './common';
import { compose, embed, float32Base64, PNG_BASE64, tokenCount } from './synth';
import type { Completion, TokenLogprob } from './synth';
import { openaiBatchRoutes } from './openai-batches';
import { contentText, error, invalid, logprobItem, missing, refused, servedTier } from './openai-shared';
import { responses } from './openai-responses';

const MODELS = ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3-mini', 'text-embedding-3-small', 'text-embedding-3-large', 'dall-e-3', 'gpt-image-1'];

// ---------- chat completions ----------

const ROLES = ['system', 'developer', 'user', 'assistant', 'tool', 'function'];

function chatUsage(c: Completion): Json {
  const u = c.usage;
  return {
    prompt_tokens: u.prompt,
    completion_tokens: u.completion,
    total_tokens: u.prompt + u.completion,
    prompt_tokens_details: { cached_tokens: u.cached, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: u.reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}
const chatFinish = (c: Completion): string => (c.finish === 'tool' ? 'tool_calls' : c.finish === 'length' ? 'length' : 'stop');

async function chat(ctx: Ctx): Promise<void> {
  const b = obj(ctx.body);
  const model = str(b.model);
  if (!model) return error(ctx, 400, 'you must provide a model parameter', null, null);
  if (b.messages === undefined) return missing(ctx, 'messages');
  const messages = arr(b.messages);
  if (messages.length === 0) return error(ctx, 400, "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", 'messages', 'empty_array');
  let userText = '';
  let inputChars = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = obj(messages[i]);
    const role = str(m.role);
    if (!role || !ROLES.includes(role)) return invalid(ctx, `messages[${i}].role`, `Invalid value: '${String(m.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`);
    const text = contentText(m.content);
    inputChars += text.length;
    for (const tc of arr(m.tool_calls)) inputChars += (str(obj(obj(tc).function).arguments) ?? '').length;
    if (role === 'user') userText = text;
  }
  const stream = b.stream === true;
  if (b.stream_options !== undefined && b.stream_options !== null && !stream) return error(ctx, 400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options', 'invalid_value');
  const topK = num(b.top_logprobs) ?? 0;
  if (topK < 0 || topK > 20) return error(ctx, 400, `Invalid 'top_logprobs': expected a value between 0 and 20, but got ${topK} instead.`, 'top_logprobs', 'invalid_value');

  const c = compose(ctx.knobs, { userText, inputChars, maxTokens: num(b.max_completion_tokens) ?? num(b.max_tokens), stop: strList(b.stop), wantLogprobs: b.logprobs === true });
  const id = newId('chatcmpl-');
  const created = unixNow();
  const callId = newId('call_');
  const lp = (list: TokenLogprob[]): Json => ({ content: list.map((p) => logprobItem(p, topK)), refusal: null });

  if (!stream) {
    const message: Json = { role: 'assistant', content: c.toolCall ? null : c.text, refusal: null, annotations: [] };
    if (c.toolCall) message.tool_calls = [{ id: callId, type: 'function', function: { name: c.toolCall.name, arguments: c.toolCall.arguments } }];
    return sendJson(ctx, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message, logprobs: c.logprobs ? lp(c.logprobs) : null, finish_reason: chatFinish(c) }],
      usage: chatUsage(c),
      service_tier: servedTier(b, ctx.knobs),
      system_fingerprint: 'fp_fake',
    });
  }

  const withUsage = obj(b.stream_options).include_usage === true;
  const chunk = (delta: Json, finish: string | null, logprobs: Json | null = null): string => {
    const body: Json = { id, object: 'chat.completion.chunk', created, model, service_tier: servedTier(b, ctx.knobs), system_fingerprint: 'fp_fake', choices: [{ index: 0, delta, logprobs, finish_reason: finish }] };
    if (withUsage) body.usage = null;
    return sse(null, body);
  };
  const tool = c.toolCall;
  await runStream(ctx, {
    head: [
      tool
        ? chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: callId, type: 'function', function: { name: tool.name, arguments: '' } }], refusal: null }, null)
        : chunk({ role: 'assistant', content: '', refusal: null }, null),
    ],
    count: c.pieces.length,
    delta: (i) => {
      const piece = c.pieces[i % c.pieces.length];
      if (tool) return chunk({ tool_calls: [{ index: 0, function: { arguments: piece.text } }] }, null);
      return chunk({ content: piece.text }, null, c.logprobs ? lp(piece.lp) : null);
    },
    tail: () => {
      const frames = [chunk({}, chatFinish(c))];
      if (withUsage) frames.push(sse(null, { id, object: 'chat.completion.chunk', created, model, service_tier: servedTier(b, ctx.knobs), system_fingerprint: 'fp_fake', choices: [], usage: chatUsage(c) }));
      frames.push('data: [DONE]\n\n');
      return frames;
    },
  });
}

// ---------- embeddings ----------

function embeddings(ctx: Ctx): void {
  const b = obj(ctx.body);
  const model = str(b.model);
  if (!model) return error(ctx, 400, 'you must provide a model parameter', null, null);
  if (b.input === undefined || b.input === null) return missing(ctx, 'input');
  const raw = b.input;
  // string | string[] | number[] (token ids) | number[][]
  const inputs: Array<{ text: string; tokens: number }> = [];
  if (typeof raw === 'string') inputs.push({ text: raw, tokens: tokenCount(raw.length) });
  else if (Array.isArray(raw) && raw.length > 0 && raw.every((x) => typeof x === 'number')) inputs.push({ text: raw.join(' '), tokens: raw.length });
  else if (Array.isArray(raw)) {
    for (const x of raw) {
      if (typeof x === 'string') inputs.push({ text: x, tokens: tokenCount(x.length) });
      else if (Array.isArray(x) && x.length > 0 && x.every((t) => typeof t === 'number')) inputs.push({ text: x.join(' '), tokens: x.length });
      else return error(ctx, 400, "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", null, null);
    }
  }
  if (inputs.length === 0 || inputs.some((x) => x.text === '')) return error(ctx, 400, "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", null, null);
  const format = b.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') return invalid(ctx, 'encoding_format', `Invalid value: '${String(format)}'. Supported values are: 'float' and 'base64'.`);
  const dims = num(b.dimensions) ?? ctx.knobs.embeddingDims ?? 8;
  if (dims < 1 || !Number.isInteger(dims)) return error(ctx, 400, `Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got ${dims} instead.`, 'dimensions', 'integer_below_min_value');
  const tokens = ctx.knobs.promptTokens ?? inputs.reduce((s, x) => s + x.tokens, 0);
  sendJson(ctx, 200, {
    object: 'list',
    data: inputs.map((x, index) => {
      const v = embed(x.text, dims);
      return { object: 'embedding', index, embedding: format === 'base64' ? float32Base64(v) : v };
    }),
    model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

// ---------- images ----------

function images(ctx: Ctx): void {
  const b = obj(ctx.body);
  const prompt = str(b.prompt);
  if (!prompt) return missing(ctx, 'prompt');
  const model = str(b.model) ?? 'dall-e-2';
  const n = num(b.n) ?? 1;
  if (n < 1 || n > 10 || !Number.isInteger(n)) return error(ctx, 400, `Invalid 'n': expected an integer between 1 and 10, but got ${n} instead.`, 'n', 'invalid_value');
  const isGptImage = model.startsWith('gpt-image');
  const format = b.response_format ?? (isGptImage ? 'b64_json' : 'url');
  if (format !== 'url' && format !== 'b64_json') return invalid(ctx, 'response_format', `Invalid value: '${String(format)}'. Supported values are: 'url' and 'b64_json'.`);
  const revised = ctx.knobs.text ?? prompt;
  const id = newId('img-');
  const data = Array.from({ length: n }, (_, i) => (format === 'url' ? { url: `${ctx.baseUrl}/files/${id}-${i}.png`, revised_prompt: revised } : { b64_json: PNG_BASE64, revised_prompt: revised }));
  const body: Json = { created: unixNow(), data };
  if (isGptImage) {
    const input = ctx.knobs.promptTokens ?? tokenCount(prompt.length);
    const output = ctx.knobs.completionTokens ?? 272 * n;
    body.usage = { input_tokens: input, output_tokens: output, total_tokens: input + output, input_tokens_details: { text_tokens: input, image_tokens: 0 } };
  }
  sendJson(ctx, 200, body);
}

// ---------- router ----------

const POST_ROUTES = new Map<string, (ctx: Ctx) => Promise<void> | void>([
  ['/chat/completions', chat],
  ['/responses', responses],
  ['/embeddings', embeddings],
  ['/images/generations', images],
]);
/** A batch line: the synchronous route of its url (openai-batches.ts checked the url against the batch's endpoint). */
const batchLine = (ctx: Ctx): Promise<void> | void => {
  const route = POST_ROUTES.get(ctx.path);
  if (!route) return error(ctx, 404, `Invalid URL (POST /v1${ctx.path})`, null, null);
  if (!refused(ctx, `POST ${ctx.path}`)) return route(ctx);
};
const modelObj = (id: string): Json => ({ id, object: 'model', created: 1700000000, owned_by: 'openai' });

export const openai: WireFormat = {
  prefixes: ['/openai/v1'],
  auth(ctx) {
    if (/^Bearer\s+\S/i.test(ctx.req.headers.authorization ?? '')) return true;
    error(ctx, 401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", null, null);
    return false;
  },
  error: (ctx, status, message) => error(ctx, status, message),
  async handle(ctx) {
    const { method, path } = ctx;
    const post = method === 'POST' ? POST_ROUTES.get(path) : undefined;
    if (post) {
      if (!isObj(ctx.body)) return error(ctx, 400, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)", null, null);
      if (!refused(ctx, `POST ${path}`)) await post(ctx);
      return;
    }
    if (method === 'POST' && path === '/batches' && refused(ctx, 'POST /batches')) return;
    if (await openaiBatchRoutes(ctx, batchLine, error)) return;
    if (method === 'GET' && path === '/models') return sendJson(ctx, 200, { object: 'list', data: MODELS.map(modelObj) });
    if (method === 'GET' && path.startsWith('/models/')) return sendJson(ctx, 200, modelObj(decodeURIComponent(path.slice(8))));
    error(ctx, 404, `Invalid URL (${method} /v1${path})`, null, null);
  },
};
