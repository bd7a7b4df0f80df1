/** Anthropic Messages API wire format, mounted at `/anthropic/v1`; Message Batches in anthropic-batches.ts. */
import { arr, isObj, newId, num, obj, runStream, sendJson, sendRaw, sse, str, strList } from './common';
import type { Ctx, Json, WireFormat } from './common';
import { compose } from './synth';
import type { Completion } from './synth';
import { anthropicBatchRoutes } from './anthropic-batches';
import { dotted } from './request-check';
import { ANTHROPIC_FAMILIES, anthropicThinkingRefusal, familyOf } from './provider-rules';

const ERRORS: Record<number, [type: string, message: string]> = {
  400: ['invalid_request_error', 'Invalid request.'],
  401: ['authentication_error', 'invalid x-api-key'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'Not found.'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit.'],
  500: ['api_error', 'Internal server error'],
  529: ['overloaded_error', 'Overloaded'],
};

function error(ctx: Ctx, status: number, message?: string): void {
  const [type, defMessage] = ERRORS[status] ?? (status >= 500 ? ERRORS[500] : ERRORS[400]);
  const requestId = newId('req_');
  sendRaw(ctx, status, { type: 'error', error: { type, message: message ?? defMessage }, request_id: requestId }, { 'request-id': requestId });
}

/** Text of `content` (string or blocks): text blocks, tool results, tool inputs. */
function blocksText(content: unknown): string {
  if (typeof content === 'string') return content;
  let out = '';
  for (const block of arr(content)) {
    const b = obj(block);
    if (b.type === 'text') out += str(b.text) ?? '';
    else if (b.type === 'tool_result') out += blocksText(b.content);
    else if (b.type === 'tool_use') out += JSON.stringify(b.input ?? {});
  }
  return out;
}

/**
 * Anthropic's 400 for a body its request types do not allow (fakes/definitions/anthropic-requests.json), or for a
 * model's documented rules (provider-rules.ts): sent, and true, when the request is refused.
 */
function refused(ctx: Ctx, operation: string): boolean {
  const v = ctx.shared.checker.check('anthropic', operation, ctx.body);
  if (v) {
    const message = v.kind === 'unknown' ? 'Extra inputs are not permitted' : v.kind === 'missing' ? 'Field required' : v.message;
    error(ctx, 400, `${dotted(v.path, 'dots')}: ${message}`);
    return true;
  }
  const b = obj(ctx.body);
  const family = familyOf(ANTHROPIC_FAMILIES, str(b.model) ?? '');
  const max = num(b.max_tokens);
  if (family && max !== undefined && max > family.maxOutputTokens) {
    error(ctx, 400, `max_tokens: ${max} > ${family.maxOutputTokens}, which is the maximum allowed number of output tokens for ${String(b.model)}`);
    return true;
  }
  const system = arr(b.messages).findIndex((m) => obj(m).role === 'system');
  if (family && !family.midConversationSystem && system >= 0) {
    error(ctx, 400, `messages.${system}.role: Input should be 'user' or 'assistant'`);
    return true;
  }
  const thinking = anthropicThinkingRefusal(b);
  if (thinking) error(ctx, 400, thinking);
  return thinking !== undefined;
}

interface Prompt {
  userText: string;
  inputChars: number;
}

/** Validates the Messages request like the real API; sends the 400 and returns null when invalid. */
function readPrompt(ctx: Ctx, b: Json, needMaxTokens: boolean): Prompt | null {
  const bad = (message: string): null => (error(ctx, 400, message), null);
  if (!str(b.model)) return bad('model: Field required');
  if (needMaxTokens) {
    if (b.max_tokens === undefined) return bad('max_tokens: Field required');
    const max = num(b.max_tokens);
    if (max === undefined || !Number.isInteger(max) || max < 1) return bad('max_tokens: Input should be a valid integer greater than or equal to 1');
  }
  if (b.messages === undefined) return bad('messages: Field required');
  if (!Array.isArray(b.messages)) return bad('messages: Input should be a valid list');
  if (b.messages.length === 0) return bad('messages: at least one message is required');
  let inputChars = blocksText(b.system).length;
  let userText = '';
  for (let i = 0; i < b.messages.length; i++) {
    const m = obj(b.messages[i]);
    if (m.role !== 'user' && m.role !== 'assistant' && m.role !== 'system') return bad(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (typeof m.content !== 'string' && !Array.isArray(m.content)) return bad(`messages.${i}.content: Field required`);
    const text = blocksText(m.content);
    inputChars += text.length;
    if (m.role === 'user') userText = text;
  }
  for (const t of arr(b.tools)) {
    const tool = obj(t);
    if (!str(tool.name)) return bad('tools.0.name: Field required');
    inputChars += JSON.stringify(tool.input_schema ?? {}).length;
  }
  return { userText, inputChars };
}

const STOP: Record<Completion['finish'], string> = { stop: 'end_turn', stop_sequence: 'stop_sequence', length: 'max_tokens', tool: 'tool_use' };

function toolInput(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}

async function messages(ctx: Ctx): Promise<void> {
  if (refused(ctx, 'POST /messages')) return;
  const b = obj(ctx.body);
  const prompt = readPrompt(ctx, b, true);
  if (!prompt) return;
  const c = compose(ctx.knobs, { ...prompt, maxTokens: num(b.max_tokens), stop: strList(b.stop_sequences) });
  const model = String(b.model);
  const id = newId('msg_');
  const toolId = newId('toolu_');
  const u = c.usage;
  const usage = (outputTokens: number): Json => ({
    input_tokens: Math.max(0, u.prompt - u.cached),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: u.cached,
    output_tokens: outputTokens,
    service_tier: 'standard',
  });
  const tool = c.toolCall;
  if (b.stream !== true) {
    return sendJson(ctx, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model,
      content: tool ? [{ type: 'tool_use', id: toolId, name: tool.name, input: toolInput(tool.arguments) }] : [{ type: 'text', text: c.text }],
      stop_reason: STOP[c.finish],
      stop_sequence: c.stopSequence,
      usage: usage(u.completion),
    });
  }
  const ev = (type: string, data: Json): string => sse(type, { type, ...data });
  await runStream(ctx, {
    head: [
      ev('message_start', { message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: usage(1) } }),
      ev('content_block_start', { index: 0, content_block: tool ? { type: 'tool_use', id: toolId, name: tool.name, input: {} } : { type: 'text', text: '' } }),
      ev('ping', {}),
    ],
    count: c.pieces.length,
    delta: (i) => {
      const text = c.pieces[i % c.pieces.length].text;
      return ev('content_block_delta', { index: 0, delta: tool ? { type: 'input_json_delta', partial_json: text } : { type: 'text_delta', text } });
    },
    tail: () => [
      ev('content_block_stop', { index: 0 }),
      ev('message_delta', { delta: { stop_reason: STOP[c.finish], stop_sequence: c.stopSequence }, usage: { output_tokens: u.completion } }),
      ev('message_stop', {}),
    ],
  });
}

function countTokens(ctx: Ctx): void {
  if (refused(ctx, 'POST /messages/count_tokens')) return;
  const prompt = readPrompt(ctx, obj(ctx.body), false);
  if (prompt) sendJson(ctx, 200, { input_tokens: ctx.knobs.promptTokens ?? Math.max(1, Math.ceil(prompt.inputChars / 4)) });
}

const MODELS = ['claude-opus-4-1', 'claude-sonnet-4-5', 'claude-haiku-4-5'];

export const anthropic: WireFormat = {
  prefixes: ['/anthropic/v1'],
  auth(ctx) {
    const h = ctx.req.headers;
    if (!h['x-api-key']) error(ctx, 401, 'x-api-key header is required');
    else if (!h['anthropic-version']) error(ctx, 400, 'anthropic-version: header is required');
    else return true;
    return false;
  },
  error,
  async handle(ctx) {
    const { method, path } = ctx;
    if (method === 'POST' && (path === '/messages' || path === '/messages/count_tokens')) {
      if (!isObj(ctx.body)) return error(ctx, 400, 'There was an error parsing the body of your request. Please ensure the body is valid JSON.');
      return path === '/messages' ? messages(ctx) : countTokens(ctx);
    }
    if (await anthropicBatchRoutes(ctx, messages, error)) return;
    if (method === 'GET' && path === '/models') {
      const data = MODELS.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' }));
      return sendJson(ctx, 200, { data, has_more: false, first_id: MODELS[0], last_id: MODELS[MODELS.length - 1] });
    }
    error(ctx, 404, `${method} /v1${path} not found`);
  },
};
