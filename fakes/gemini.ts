/** Google Gemini API wire format, mounted at `/gemini/v1beta` (and `/gemini/v1`). */
import { arr, isObj, newId, num, obj, runStream, sendJson, sendRaw, sse, str, strList } from './common';
import type { Ctx, Json, WireFormat } from './common';
import { compose, embed, tokenCount } from './synth';
import type { Completion, TokenLogprob } from './synth';
import { geminiThinkingRefusal } from './provider-rules';

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ABORTED',
  429: 'RESOURCE_EXHAUSTED',
  499: 'CANCELLED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};
const MESSAGES: Record<string, string> = {
  RESOURCE_EXHAUSTED: 'Resource has been exhausted (e.g. check quota).',
  INTERNAL: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  UNAVAILABLE: 'The model is overloaded. Please try again later.',
  DEADLINE_EXCEEDED: 'Deadline expired before operation could complete.',
};

function error(ctx: Ctx, status: number, message?: string): void {
  const code = STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT');
  sendRaw(ctx, status, { error: { code: status, message: message ?? MESSAGES[code] ?? 'Request contains an invalid argument.', status: code } });
}

const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
/** `generation_config.response_schema.properties[1].enum[2]`: how Google's errors name a field. */
const fieldPath = (p: ReadonlyArray<string | number>): string =>
  p.reduce<string>((out, s) => (typeof s === 'number' ? `${out}[${s}]` : out ? `${out}.${snake(s)}` : snake(s)), '');

/**
 * Gemini's 400 for a body its request types do not allow (fakes/definitions/gemini-requests.json), or for the model's
 * documented thinking budget (provider-rules.ts): sent, and true, when the request is refused.
 */
function refused(ctx: Ctx, method: string, model: string): boolean {
  const v = ctx.shared.checker.check('gemini', method, ctx.body);
  if (v) {
    const field = String(v.path[v.path.length - 1]);
    if (v.kind === 'unknown') error(ctx, 400, `Invalid JSON payload received. Unknown name "${field}" at '${fieldPath(v.path.slice(0, -1))}': Cannot find field.`);
    else if (v.kind === 'missing') error(ctx, 400, `* GenerateContentRequest.${fieldPath(v.path)}: ${field} is not specified\n`);
    else error(ctx, 400, `* GenerateContentRequest.${fieldPath(v.path)}: ${v.message}\n`);
    return true;
  }
  const thinking = geminiThinkingRefusal(model, obj(obj(obj(ctx.body).generationConfig).thinkingConfig));
  if (thinking) error(ctx, 400, thinking);
  return thinking !== undefined;
}

const partsText = (parts: unknown): string => {
  let out = '';
  for (const p of arr(parts)) {
    const part = obj(p);
    if (typeof part.text === 'string') out += part.text;
    else if (part.functionCall) out += JSON.stringify(part.functionCall);
    else if (part.functionResponse) out += JSON.stringify(part.functionResponse);
  }
  return out;
};

const FINISH: Record<Completion['finish'], string> = { stop: 'STOP', stop_sequence: 'STOP', length: 'MAX_TOKENS', tool: 'STOP' };

function parseArgs(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return {};
  }
}

async function generate(ctx: Ctx, model: string, stream: boolean): Promise<void> {
  const b = obj(ctx.body);
  if (b.contents === undefined) return error(ctx, 400, '* GenerateContentRequest.contents: contents is not specified\n');
  if (!Array.isArray(b.contents) || b.contents.length === 0) return error(ctx, 400, '* GenerateContentRequest.contents: contents is not specified\n');
  let inputChars = partsText(obj(b.systemInstruction).parts).length;
  let userText = '';
  for (let i = 0; i < b.contents.length; i++) {
    const c = obj(b.contents[i]);
    if (c.role !== undefined && c.role !== 'user' && c.role !== 'model' && c.role !== 'function') return error(ctx, 400, 'Please use a valid role: user, model.');
    if (arr(c.parts).length === 0) return error(ctx, 400, `* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    const text = partsText(c.parts);
    inputChars += text.length;
    if (c.role !== 'model') userText = text;
  }
  const cfg = obj(b.generationConfig);
  const topK = num(cfg.logprobs);
  if (topK !== undefined && (topK < 0 || topK > 20)) return error(ctx, 400, `logprobs must be in the range [0, 20], got ${topK}.`);
  const c = compose(ctx.knobs, { userText, inputChars, maxTokens: num(cfg.maxOutputTokens), stop: strList(cfg.stopSequences), wantLogprobs: cfg.responseLogprobs === true });
  const responseId = newId('');
  const u = c.usage;
  const promptDetails = [{ modality: 'TEXT', tokenCount: u.prompt }];
  const fullUsage: Json = { promptTokenCount: u.prompt, candidatesTokenCount: Math.max(0, u.completion - u.reasoning), totalTokenCount: u.prompt + u.completion, promptTokensDetails: promptDetails };
  if (u.cached > 0) fullUsage.cachedContentTokenCount = u.cached;
  if (u.reasoning > 0) fullUsage.thoughtsTokenCount = u.reasoning;

  const candidate = (parts: Json[], lp: TokenLogprob[] | null, finish: boolean): Json => {
    const cand: Json = { content: { parts, role: 'model' } };
    if (finish) cand.finishReason = FINISH[c.finish];
    if (lp && lp.length > 0) {
      const sum = lp.reduce((s, p) => s + p.logprob, 0);
      cand.avgLogprobs = sum / lp.length;
      const result: Json = { chosenCandidates: lp.map((p) => ({ token: p.token, logProbability: p.logprob })), logProbabilitySum: sum };
      if (topK) result.topCandidates = lp.map((p) => ({ candidates: p.top.slice(0, topK).map(([token, logProbability]) => ({ token, logProbability })) }));
      cand.logprobsResult = result;
    }
    cand.index = 0;
    return cand;
  };
  const tool = c.toolCall;
  const toolParts = (): Json[] => (tool ? [{ functionCall: { name: tool.name, args: parseArgs(tool.arguments) } }] : []);
  if (!stream) {
    return sendJson(ctx, 200, { candidates: [candidate(tool ? toolParts() : [{ text: c.text }], c.logprobs, true)], usageMetadata: fullUsage, modelVersion: model, responseId });
  }

  // Gemini frames SSE with CRLF; without `alt=sse` it streams one JSON array.
  const asSse = ctx.query.get('alt') === 'sse';
  const partialUsage = { promptTokenCount: u.prompt, totalTokenCount: u.prompt, promptTokensDetails: promptDetails };
  await runStream(ctx, {
    contentType: asSse ? 'text/event-stream' : 'application/json; charset=UTF-8',
    head: [],
    count: tool ? 1 : c.pieces.length,
    delta: (i, last) => {
      const piece = c.pieces[i % c.pieces.length];
      const chunk = { candidates: [candidate(tool ? toolParts() : [{ text: piece.text }], c.logprobs ? piece.lp : null, last)], usageMetadata: last ? fullUsage : partialUsage, modelVersion: model, responseId };
      return asSse ? sse(null, chunk, '\r\n') : `${i === 0 ? '[' : ',\r\n'}${JSON.stringify(chunk)}`;
    },
    tail: () => (asSse ? [] : [']']),
  });
}

function contentOf(ctx: Ctx, req: Json, where: string): string | null {
  const parts = arr(obj(req.content).parts);
  if (parts.length === 0) {
    error(ctx, 400, `* ${where}.content: content is not specified\n`);
    return null;
  }
  return partsText(parts);
}
const dimsOf = (ctx: Ctx, req: Json): number => num(req.outputDimensionality) ?? ctx.knobs.embeddingDims ?? 8;

function embedContent(ctx: Ctx): void {
  const b = obj(ctx.body);
  const text = contentOf(ctx, b, 'EmbedContentRequest');
  if (text !== null) sendJson(ctx, 200, { embedding: { values: embed(text, dimsOf(ctx, b)) } });
}

function batchEmbed(ctx: Ctx, model: string): void {
  const b = obj(ctx.body);
  const requests = arr(b.requests);
  if (requests.length === 0) return error(ctx, 400, '* BatchEmbedContentsRequest.requests: requests is not specified\n');
  const embeddings: Json[] = [];
  for (let i = 0; i < requests.length; i++) {
    const r = obj(requests[i]);
    if (r.model !== undefined && r.model !== `models/${model}`) return error(ctx, 400, `* BatchEmbedContentsRequest.requests[${i}].model: model must match the request model "models/${model}".\n`);
    const text = contentOf(ctx, r, `BatchEmbedContentsRequest.requests[${i}]`);
    if (text === null) return;
    embeddings.push({ values: embed(text, dimsOf(ctx, r)) });
  }
  sendJson(ctx, 200, { embeddings });
}

function countTokens(ctx: Ctx): void {
  const b = obj(ctx.body);
  const contents = arr(b.contents ?? obj(b.generateContentRequest).contents);
  const chars = contents.reduce<number>((s, c) => s + partsText(obj(c).parts).length, 0);
  const total = ctx.knobs.promptTokens ?? tokenCount(chars);
  sendJson(ctx, 200, { totalTokens: total, promptTokensDetails: [{ modality: 'TEXT', tokenCount: total }] });
}

const MODELS = ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.0-flash', 'gemini-embedding-001', 'gemini-embedding-2', 'text-embedding-004'];
const modelInfo = (name: string): Json => ({
  name: `models/${name}`,
  version: '001',
  displayName: name,
  inputTokenLimit: 1048576,
  outputTokenLimit: name.includes('embedding') ? 1 : 65536,
  supportedGenerationMethods: name.includes('embedding') ? ['embedContent', 'batchEmbedContents'] : ['generateContent', 'countTokens'],
});

const METHOD = /^\/models\/([^/:]+):([A-Za-z]+)$/;

export const gemini: WireFormat = {
  prefixes: ['/gemini/v1beta', '/gemini/v1'],
  auth(ctx) {
    const h = ctx.req.headers;
    if (h['x-goog-api-key'] || ctx.query.get('key') || /^Bearer\s+\S/i.test(h.authorization ?? '')) return true;
    error(ctx, 403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.");
    return false;
  },
  error,
  async handle(ctx) {
    const { method, path } = ctx;
    const m = method === 'POST' ? METHOD.exec(path) : null;
    if (m) {
      if (!isObj(ctx.body)) return error(ctx, 400, 'Invalid JSON payload received. Unexpected token.');
      const model = decodeURIComponent(m[1]);
      if (refused(ctx, m[2], model)) return;
      switch (m[2]) {
        case 'generateContent':
          return generate(ctx, model, false);
        case 'streamGenerateContent':
          return generate(ctx, model, true);
        case 'embedContent':
          return embedContent(ctx);
        case 'batchEmbedContents':
          return batchEmbed(ctx, model);
        case 'countTokens':
          return countTokens(ctx);
      }
    }
    if (method === 'GET' && path === '/models') return sendJson(ctx, 200, { models: MODELS.map(modelInfo) });
    if (method === 'GET' && path.startsWith('/models/')) return sendJson(ctx, 200, modelInfo(decodeURIComponent(path.slice(8))));
    error(ctx, 404, `Method not found: ${method} ${path}`);
  },
};
