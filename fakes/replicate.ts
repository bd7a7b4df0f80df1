/**
 * Replicate HTTP API wire format, mounted at `/replicate/v1`: asynchronous predictions that
 * advance one step per poll, with output files served by the fake at `/files/…`.
 */
import { isObj, newId, num, obj, sendJson, sendRaw, splitEven, str } from './common';
import type { Ctx, Json, WireFormat } from './common';
import type { FakeKnobs } from './fake-knobs';
import type { Kind, Prediction, Status } from './fake-state';
import { tokenCount } from './synth';

const MAX_KEPT = 10_000;

const ERRORS: Record<number, [title: string, detail: string]> = {
  400: ['Bad Request', 'The request body could not be parsed.'],
  401: ['Unauthenticated', 'You did not pass a valid authentication token'],
  402: ['Insufficient credit', 'You have insufficient credit to run this model. Go to https://replicate.com/account/billing#billing to purchase credit.'],
  403: ['Forbidden', 'You do not have permission to perform this action.'],
  404: ['Not found', 'The requested resource could not be found.'],
  422: ['Unprocessable Entity', 'The request could not be processed.'],
  429: ['Request was throttled', 'Request was throttled. Your rate limit resets in ~1s.'],
  500: ['Internal Server Error', 'An internal error occurred.'],
  503: ['Service Unavailable', 'The service is temporarily unavailable.'],
};

function error(ctx: Ctx, status: number, detail?: string, extra?: Json): void {
  const [title, defDetail] = ERRORS[status] ?? (status >= 500 ? ERRORS[500] : ERRORS[400]);
  sendRaw(ctx, status, { title, detail: detail ?? defDetail, status, ...extra }, undefined, 'application/problem+json');
}
const invalidInput = (ctx: Ctx, field: string, description: string): void =>
  error(ctx, 422, `- ${field}: ${description}`, { title: 'Input validation failed', invalid_fields: [{ type: 'required', field, description }] });

const VIDEO_FORMATS = ['mp4', 'webm', 'mov', 'gif'];
const AUDIO_FORMATS = ['mp3', 'wav', 'flac', 'ogg', 'aac', 'm4a'];

/** Media kind from the input's `output_format`, else from the model name; images by default. */
function kindOf(model: string, input: Json): { kind: Kind; ext: string } {
  const format = str(input.output_format)?.toLowerCase();
  const name = model.toLowerCase();
  if (format && VIDEO_FORMATS.includes(format)) return { kind: 'video', ext: 'mp4' };
  if (format && AUDIO_FORMATS.includes(format)) return { kind: 'audio', ext: format === 'wav' ? 'wav' : 'mp3' };
  if (/video|veo|kling|hailuo|seedance/.test(name)) return { kind: 'video', ext: 'mp4' };
  if (/audio|music|speech|tts|voice/.test(name)) return { kind: 'audio', ext: 'mp3' };
  if (!/upscale/.test(name) && /llama|gpt|claude|mistral|mixtral|qwen|deepseek|gemma|granite|llm/.test(name)) return { kind: 'text', ext: '' };
  return { kind: 'image', ext: 'png' };
}

const COUNT_FIELDS = ['num_outputs', 'max_images', 'num_images', 'number_of_images'];
const iso = (d: Date | null): string | undefined => d?.toISOString();

function view(ctx: Ctx, p: Prediction): Json {
  const base = `${ctx.baseUrl}/replicate/v1/predictions/${p.id}`;
  return {
    id: p.id,
    model: p.model,
    version: p.version,
    input: p.input,
    logs: p.logs,
    output: p.output,
    data_removed: false,
    error: p.error,
    status: p.status,
    created_at: iso(p.createdAt),
    started_at: iso(p.startedAt),
    completed_at: iso(p.completedAt),
    urls: { cancel: `${base}/cancel`, get: base, web: `https://replicate.com/p/${p.id}` },
    metrics: p.metrics,
  };
}

function finish(ctx: Ctx, p: Prediction): void {
  const k = p.knobs;
  const now = new Date();
  p.startedAt ??= now;
  p.completedAt = now;
  const predictTime = Math.max(0.001, (now.getTime() - p.startedAt.getTime()) / 1000);
  p.metrics = { predict_time: predictTime, total_time: Math.max(predictTime, (now.getTime() - p.createdAt.getTime()) / 1000) };
  if (k.replicateFail) {
    p.status = 'failed';
    p.error = k.text ?? 'Prediction failed: the fake model raised an error (replicateFail)';
    p.logs += 'Traceback (most recent call last):\nRuntimeError: fake failure\n';
    return;
  }
  p.status = 'succeeded';
  p.logs += 'Done.\n';
  const file = (suffix: string): string => `${ctx.baseUrl}/files/${p.id}${suffix}.${p.ext}`;
  const duration = k.mediaDurationSeconds ?? num(p.input.duration) ?? num(p.input.seconds) ?? 5;
  if (p.kind === 'video') {
    p.output = file('');
    p.metrics.video_output_count = 1;
    if (!k.replicateNoDuration) p.metrics.video_output_duration_seconds = duration;
  } else if (p.kind === 'audio') {
    p.output = file('');
    if (!k.replicateNoDuration) p.metrics.audio_output_duration_seconds = duration;
  } else if (p.kind === 'text') {
    const text = k.text ?? `Echo: ${str(p.input.prompt) ?? ''}`;
    p.output = splitEven(text, k.streamChunks ?? 4);
    const inputTokens = k.promptTokens ?? tokenCount(JSON.stringify(p.input).length);
    const outputTokens = k.completionTokens ?? tokenCount(text.length);
    Object.assign(p.metrics, { input_token_count: inputTokens, output_token_count: outputTokens, time_to_first_token: predictTime / 2, tokens_per_second: outputTokens / predictTime });
  } else {
    const field = COUNT_FIELDS.find((f) => num(p.input[f]) !== undefined);
    const count = field ? Math.max(1, Math.floor(num(p.input[field]) ?? 1)) : 1;
    p.output = field ? Array.from({ length: count }, (_, i) => file(`-${i}`)) : file('');
    p.metrics.image_output_count = count;
  }
  if (k.replicateText !== undefined && p.kind !== 'text') {
    p.output = k.replicateTextOnly ? k.replicateText : { [p.kind]: p.output, text: k.replicateText };
    if (k.replicateTextOnly) p.metrics = { predict_time: p.metrics.predict_time, total_time: p.metrics.total_time };
  }
}

/** One poll: `replicateSteps` polls report "processing", the next one finishes. */
function advance(ctx: Ctx, p: Prediction): void {
  if (p.status !== 'starting' && p.status !== 'processing') return;
  p.polls++;
  if (p.polls <= (p.knobs.replicateSteps ?? 1)) {
    p.status = 'processing';
    p.startedAt ??= new Date();
    p.logs += `Running step ${p.polls}...\n`;
  } else finish(ctx, p);
}

function create(ctx: Ctx, model: string | null): void {
  const b = obj(ctx.body);
  let version = 'hidden';
  if (model === null) {
    const v = str(b.version);
    if (!v) return invalidInput(ctx, 'version', 'version is required');
    const colon = v.indexOf(':');
    model = colon > 0 ? v.slice(0, colon) : `community/model-${v.slice(0, 8)}`;
    version = colon > 0 ? v.slice(colon + 1) : v;
  }
  if (b.input === undefined) return invalidInput(ctx, 'input', 'input is required');
  if (!isObj(b.input)) return invalidInput(ctx, 'input', 'Invalid type. Expected: object, given: ' + (Array.isArray(b.input) ? 'array' : typeof b.input));
  const p: Prediction = {
    id: newId('').toLowerCase(),
    model,
    version,
    input: b.input,
    ...kindOf(model, b.input),
    status: 'starting',
    polls: 0,
    knobs: ctx.knobs,
    createdAt: new Date(),
    startedAt: null,
    completedAt: null,
    logs: '',
    output: null,
    error: null,
    metrics: {},
  };
  const store = ctx.shared.predictions;
  store.set(p.id, p);
  if (store.size > MAX_KEPT) store.delete(store.keys().next().value as string);
  // `Prefer: wait` asks for a synchronous answer: finish right away.
  if (/^wait\b/i.test(String(ctx.req.headers.prefer ?? ''))) finish(ctx, p);
  sendJson(ctx, 201, view(ctx, p));
}

const MODEL_PREDICTIONS = /^\/(?:models|deployments)\/([^/]+)\/([^/]+)\/predictions$/;
const PREDICTION = /^\/predictions\/([^/]+)(\/cancel)?$/;

export const replicate: WireFormat = {
  prefixes: ['/replicate/v1'],
  auth(ctx) {
    if (/^(Bearer|Token)\s+\S/i.test(ctx.req.headers.authorization ?? '')) return true;
    error(ctx, 401, 'You did not pass an authentication token');
    return false;
  },
  error: (ctx, status, message) => error(ctx, status, message),
  handle(ctx) {
    const { method, path } = ctx;
    if (method === 'POST') {
      const m = MODEL_PREDICTIONS.exec(path);
      if (m || path === '/predictions') {
        if (!isObj(ctx.body)) return error(ctx, 400, 'The request body must be a JSON object.');
        return create(ctx, m ? `${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}` : null);
      }
    }
    const m = PREDICTION.exec(path);
    const p = m ? ctx.shared.predictions.get(m[1]) : undefined;
    if (m && !p) return error(ctx, 404);
    if (p && m?.[2] && method === 'POST') {
      ctx.shared.cancels.push({ id: p.id, status: p.status, at: new Date() });
      if (p.status === 'starting' || p.status === 'processing') {
        p.status = 'canceled';
        p.completedAt = new Date();
        p.logs += 'Prediction canceled.\n';
      }
      return sendJson(ctx, 200, view(ctx, p));
    }
    if (p && !m?.[2] && method === 'GET') {
      advance(ctx, p);
      return sendJson(ctx, 200, view(ctx, p));
    }
    error(ctx, 404);
  },
};
