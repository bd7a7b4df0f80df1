/** Replicate replies → canonical media tasks (https://replicate.com/docs/reference/http#predictions.get). */
import type { ErrorBodyInfo, MediaTask, MediaTaskStatus } from '../adapter.types';
import { isRecord, malformed, num, rec, str } from '../mapper-utils';

/** https://replicate.com/docs/topics/predictions/lifecycle */
export const REPLICATE_STATUS: ReadonlyMap<string, MediaTaskStatus> = new Map<string, MediaTaskStatus>([
  ['starting', 'pending'],
  ['processing', 'processing'],
  ['succeeded', 'succeeded'],
  ['failed', 'failed'],
  ['canceled', 'cancelled'],
  ['aborted', 'cancelled'],
]);

const FILE_URL = /^(https?:|data:)/i;

/**
 * `output` is a URL, an array of URLs, text chunks, or an object of those. Files and text are read apart: a model
 * may answer text with its file, or instead of one (interface.md, `content` of the media record).
 */
function readOutput(output: unknown): { urls: string[]; text?: string } {
  const values: unknown[] = Array.isArray(output) ? output : isRecord(output) ? Object.values(output).flat() : output == null ? [] : [output];
  const strings = values.filter((v): v is string => typeof v === 'string');
  const urls = strings.filter((s) => FILE_URL.test(s));
  const text = strings.filter((s) => !FILE_URL.test(s));
  return text.length === 0 ? { urls } : { urls, text: text.join('') };
}

export function parsePrediction(json: unknown): MediaTask {
  const body = rec(json);
  const id = str(body.id);
  const raw = str(body.status);
  const status = raw === undefined ? undefined : REPLICATE_STATUS.get(raw);
  if (!id || !status) return malformed('Replicate prediction without id or known status', json);
  const metrics = rec(body.metrics);
  const { urls, text } = status === 'succeeded' ? readOutput(body.output) : { urls: [] as string[], text: undefined };
  if (status === 'succeeded' && urls.length === 0 && text === undefined) return malformed('Replicate prediction succeeded without output', json);
  const task: MediaTask = { id, status, outputs: urls, metrics: {} };
  if (text !== undefined) task.text = text;
  const error = body.error;
  if (error !== undefined && error !== null) task.error = typeof error === 'string' ? error : JSON.stringify(error);
  const duration = num(metrics.video_output_duration_seconds) ?? num(metrics.audio_output_duration_seconds);
  if (duration !== undefined) task.metrics.durationSeconds = duration;
  const images = num(metrics.image_output_count);
  if (images !== undefined) task.metrics.imageCount = images;
  const predict = num(metrics.predict_time);
  if (predict !== undefined) task.metrics.predictSeconds = predict;
  const inTok = num(metrics.input_token_count);
  const outTok = num(metrics.output_token_count);
  if (inTok !== undefined) task.metrics.inputTokens = inTok;
  if (outTok !== undefined) task.metrics.outputTokens = outTok;
  return task;
}

/** Replicate errors are RFC 7807 problem documents: `{title, detail, status}`. */
export function extractReplicateError(body: unknown): ErrorBodyInfo {
  const b = rec(body);
  const message = str(b.detail) ?? str(b.title) ?? str(b.error);
  return message === undefined ? {} : { message };
}
