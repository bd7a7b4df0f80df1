/** The OpenAI Responses API (`POST /responses`), sync and streamed with its own event names, for openai.ts. */
import { arr, newId, num, obj, runStream, sendJson, sse, str, unixNow } from './common';
import type { Ctx, Json } from './common';
import { compose } from './synth';
import type { TokenLogprob } from './synth';
import { contentText, error, logprobItem, missing, servedTier } from './openai-shared';

/** The fake's encrypted reasoning names the item it was issued for, so that a replay is checked as OpenAI checks it. */
const ENCRYPTED_PREFIX = 'fake-encrypted-reasoning:';
const encryptedReasoning = (itemId: string): string => Buffer.from(`${ENCRYPTED_PREFIX}${itemId}`).toString('base64');
function issuedFor(content: string): string | undefined {
  const text = Buffer.from(content, 'base64').toString('utf8');
  return text.startsWith(ENCRYPTED_PREFIX) ? text.slice(ENCRYPTED_PREFIX.length) : undefined;
}

/**
 * OpenAI's 400 for a reasoning item of `input` it cannot use: encrypted content it did not issue, or issued for another
 * item than the `id` beside it; an `id` without encrypted content, which names a stored item (none is stored with
 * `store: false`). An item without an `id` is found by its encrypted content. Sent, and true, when refused.
 */
function refusedReasoning(ctx: Ctx, b: Json): boolean {
  for (const item of arr(b.input)) {
    const it = obj(item);
    if (it.type !== 'reasoning') continue;
    const id = str(it.id);
    const content = str(it.encrypted_content);
    if (content !== undefined) {
      const issued = issuedFor(content);
      if (issued === undefined || (id !== undefined && issued !== id)) {
        const reason = issued === undefined ? '' : ' Reason: Encrypted content item_id did not match the target item id.';
        error(ctx, 400, `The encrypted content for item ${id ?? issued ?? 'rs_unknown'} could not be verified.${reason}`, null, 'invalid_encrypted_content');
        return true;
      }
    } else if (id !== undefined) {
      const unstored = b.store === false ? ' Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.' : '';
      error(ctx, 400, `Item with id '${id}' not found.${unstored}`, 'input', null);
      return true;
    }
  }
  return false;
}

export async function responses(ctx: Ctx): Promise<void> {
  const b = obj(ctx.body);
  const model = str(b.model);
  if (!model) return missing(ctx, 'model');
  if (b.input === undefined && b.previous_response_id === undefined && b.prompt === undefined) return missing(ctx, 'input');
  if (refusedReasoning(ctx, b)) return;
  let userText = '';
  let inputChars = (str(b.instructions) ?? '').length;
  if (typeof b.input === 'string') {
    userText = b.input;
    inputChars += b.input.length;
  } else if (b.input !== undefined) {
    if (!Array.isArray(b.input)) return error(ctx, 400, "Invalid type for 'input': expected one of a string or an array of input items.", 'input', 'invalid_type');
    for (const item of b.input) {
      const it = obj(item);
      const text = it.content !== undefined ? contentText(it.content) : (str(it.output) ?? str(it.arguments) ?? '');
      inputChars += text.length;
      if (it.role === 'user' || it.type === 'function_call_output') userText = text;
    }
  }
  const topK = num(b.top_logprobs) ?? 0;
  const wantLogprobs = arr(b.include).includes('message.output_text.logprobs');
  const c = compose(ctx.knobs, { userText, inputChars, maxTokens: num(b.max_output_tokens), wantLogprobs });

  const id = newId('resp_');
  const itemId = newId(c.toolCall ? 'fc_' : 'msg_');
  const callId = newId('call_');
  const createdAt = unixNow();
  const status = c.finish === 'length' ? 'incomplete' : 'completed';
  const u = c.usage;
  const usage = {
    input_tokens: u.prompt,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.completion,
    output_tokens_details: { reasoning_tokens: u.reasoning },
    total_tokens: u.prompt + u.completion,
  };
  // A reasoning summary when one is asked for (`reasoning.summary`), with the reasoning encrypted when `include` asks.
  const summaryText = obj(b.reasoning).summary ? `Thinking about: ${userText.slice(0, 40)}` : undefined;
  const reasoningId = newId('rs_');
  const encrypted = arr(b.include).includes('reasoning.encrypted_content') ? encryptedReasoning(reasoningId) : undefined;
  const reasoningItem = (done: boolean): Json => ({
    id: reasoningId,
    type: 'reasoning',
    summary: done && summaryText ? [{ type: 'summary_text', text: summaryText }] : [],
    ...(encrypted !== undefined && { encrypted_content: done ? encrypted : null }),
  });
  const reasons = summaryText !== undefined || encrypted !== undefined;
  const at0 = reasons ? 1 : 0; // the answer's output_index
  const lps = (list: TokenLogprob[]): Json[] => list.map((p) => logprobItem(p, topK));
  const part = (text: string): Json => ({ type: 'output_text', annotations: [], logprobs: c.logprobs ? lps(c.logprobs) : [], text });
  const item = (done: boolean): Json =>
    c.toolCall
      ? { id: itemId, type: 'function_call', status: done ? 'completed' : 'in_progress', arguments: done ? c.toolCall.arguments : '', call_id: callId, name: c.toolCall.name }
      : { id: itemId, type: 'message', status: done ? status : 'in_progress', content: done ? [part(c.text)] : [], role: 'assistant' };
  const response = (done: boolean): Json => ({
    id,
    object: 'response',
    created_at: createdAt,
    status: done ? status : 'in_progress',
    background: false,
    error: null,
    incomplete_details: done && status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    max_tool_calls: null,
    model,
    output: done ? [...(reasons ? [reasoningItem(true)] : []), item(true)] : [],
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: obj(b.reasoning).effort ?? null, summary: obj(b.reasoning).summary ?? null },
    service_tier: servedTier(b, ctx.knobs),
    store: b.store ?? true,
    temperature: b.temperature ?? 1,
    text: { format: { type: 'text' }, verbosity: 'medium', ...obj(b.text) },
    tool_choice: b.tool_choice ?? 'auto',
    tools: b.tools ?? [],
    top_logprobs: topK,
    top_p: b.top_p ?? 1,
    truncation: b.truncation ?? 'disabled',
    usage: done ? usage : null,
    user: null,
    metadata: b.metadata ?? {},
  });
  if (b.stream !== true) return sendJson(ctx, 200, response(true));

  let seq = 0;
  const ev = (type: string, data: Json): string => sse(type, { type, sequence_number: seq++, ...data });
  const at = { item_id: itemId, output_index: at0 };
  const text = { ...at, content_index: 0 };
  const tool = c.toolCall;
  const rs = { item_id: reasoningId, output_index: 0, summary_index: 0 };
  const reasoningFrames = !reasons
    ? []
    : [
        ev('response.output_item.added', { output_index: 0, item: reasoningItem(false) }),
        ...(summaryText === undefined
          ? []
          : [
              ev('response.reasoning_summary_part.added', { ...rs, part: { type: 'summary_text', text: '' } }),
              ev('response.reasoning_summary_text.delta', { ...rs, delta: summaryText }),
              ev('response.reasoning_summary_text.done', { ...rs, text: summaryText }),
              ev('response.reasoning_summary_part.done', { ...rs, part: { type: 'summary_text', text: summaryText } }),
            ]),
        ev('response.output_item.done', { output_index: 0, item: reasoningItem(true) }),
      ];
  await runStream(ctx, {
    head: [
      ev('response.created', { response: response(false) }),
      ev('response.in_progress', { response: response(false) }),
      ...reasoningFrames,
      ev('response.output_item.added', { output_index: at0, item: item(false) }),
      ...(tool ? [] : [ev('response.content_part.added', { ...text, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } })]),
    ],
    count: c.pieces.length,
    delta: (i) => {
      const piece = c.pieces[i % c.pieces.length];
      if (tool) return ev('response.function_call_arguments.delta', { ...at, delta: piece.text });
      return ev('response.output_text.delta', { ...text, delta: piece.text, logprobs: lps(piece.lp) });
    },
    tail: () => [
      ...(tool
        ? [ev('response.function_call_arguments.done', { ...at, name: tool.name, arguments: tool.arguments })]
        : [ev('response.output_text.done', { ...text, text: c.text, logprobs: c.logprobs ? lps(c.logprobs) : [] }), ev('response.content_part.done', { ...text, part: part(c.text) })]),
      ev('response.output_item.done', { output_index: at0, item: item(true) }),
      ev(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: response(true) }),
    ],
  });
}
