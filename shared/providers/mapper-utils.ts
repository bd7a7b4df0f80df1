/** Small pure helpers of the provider mappers: untyped JSON, data: URLs, malformed replies, model families, warnings. */
import type { TextStreamEvent, TextRequest } from './provider.types';
import { upstreamError } from './upstream-error';

export type Json = Record<string, unknown>;

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export function rec(value: unknown): Json {
  return isRecord(value) ? value : {};
}

/**
 * One line of a provider batch's JSONL results: the record and its `custom_id`; a line that is not JSON, or has no
 * `custom_id`, is malformed (`provider` names it in the message).
 */
export function batchResultLine(line: string, provider: string): { o: Json; customId: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return malformed(`${provider} batch result line is not JSON`, line);
  }
  const o = rec(parsed);
  const customId = str(o.custom_id);
  return customId ? { o, customId } : malformed(`${provider} batch result line without custom_id`, parsed);
}

/** A 2xx body that is not the documented shape: `malformed_reply`, so the next endpoint may be tried. */
export function malformed(message: string, body: unknown): never {
  let raw: string | undefined;
  try {
    raw = JSON.stringify(body);
  } catch {
    raw = undefined;
  }
  throw upstreamError(raw === undefined ? { kind: 'malformed', message } : { kind: 'malformed', message, raw });
}

/** The request cannot be written in this provider's format; nothing was sent. */
export function unsupported(message: string): never {
  throw upstreamError({ kind: 'unsupported', message });
}

export interface DataUrl {
  mimeType: string;
  /** Base64 payload (non-base64 data: URLs are re-encoded). */
  base64: string;
}

/** `data:image/png;base64,AAAA` → {mimeType, base64}; anything else → undefined. */
export function parseDataUrl(url: string): DataUrl | undefined {
  const match = /^data:([^,]*?),(.*)$/s.exec(url);
  if (!match) return undefined;
  const meta = match[1] ?? '';
  const payload = match[2] ?? '';
  const parts = meta.split(';');
  const mimeType = parts[0] || 'text/plain';
  const isBase64 = parts.slice(1).some((p) => p.toLowerCase() === 'base64');
  const base64 = isBase64 ? payload : Buffer.from(decodeURIComponent(payload), 'utf8').toString('base64');
  return { mimeType, base64 };
}

const IMAGE_MIME_BY_EXTENSION: ReadonlyMap<string, string> = new Map([
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['jpeg', 'image/jpeg'],
  ['webp', 'image/webp'],
  ['gif', 'image/gif'],
  ['heic', 'image/heic'],
  ['heif', 'image/heif'],
  ['pdf', 'application/pdf'],
]);

/** Best guess of a remote file's type from its URL path (providers that want a mime type for URLs). */
export function mimeTypeFromUrl(url: string): string | undefined {
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    // not absolute: use as is
  }
  const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
  return ext ? IMAGE_MIME_BY_EXTENSION.get(ext) : undefined;
}

export function parseJsonArguments(text: string, what: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return unsupported(`${what}: arguments are not valid JSON`);
  }
  if (!isRecord(value)) return unsupported(`${what}: arguments must be a JSON object`);
  return value;
}

/** A stream `data:` line that is not JSON. */
export function parseStreamJson(data: string): { ok: true; value: Json } | { ok: false; event: TextStreamEvent } {
  try {
    const value: unknown = JSON.parse(data);
    if (isRecord(value)) return { ok: true, value };
  } catch {
    // fall through
  }
  return { ok: false, event: { type: 'error', message: 'malformed stream event: not a JSON object', raw: data.slice(0, 2000) } };
}

/**
 * Per-model rules are tables of model families (shared/providers/<kind>/model-rules.ts): a family is matched by the
 * longest prefix of the provider's model name, so `gemini-2.5-flash-lite` finds its own row before `gemini-2.5-flash`.
 */
export interface ModelFamily {
  prefix: string;
}

/** The family of `model` in a table (longest matching prefix), or undefined for a model the table does not know. */
export function familyOf<T extends ModelFamily>(table: readonly T[], model: string): T | undefined {
  let best: T | undefined;
  for (const f of table) if (model.startsWith(f.prefix) && (!best || f.prefix.length > best.prefix.length)) best = f;
  return best;
}

/** The one wording of "the model takes another value of this parameter than the caller's". */
export function replacedValueWarning(parameter: string, asked: unknown, used: unknown, model: string, why?: string): string {
  return `Value ${JSON.stringify(asked)} of parameter '${parameter}' is not offered by ${model}${why ? ` (${why})` : ''}: ${JSON.stringify(used)} was used instead`;
}

/** The one wording of "this part of the request could not be sent to the model as asked; it was left out". */
export function leftOutWarning(what: string, model: string, why: string): string {
  return `${what} was left out of the call to ${model}: ${why}`;
}

/**
 * Earlier reasoning given back in the input (reasoning items) reaches only an upstream Responses API (the openai
 * adapter's `responsesApi` endpoints); every other request leaves it out, with this one warning.
 */
export function earlierReasoningLeftOut(req: TextRequest, warnings: string[]): void {
  const n = req.input.filter((i) => i.type === 'reasoning').length;
  if (n > 0) warnings.push(leftOutWarning(`earlier reasoning (${n} input item${n === 1 ? '' : 's'})`, req.model, 'only an endpoint that speaks the Responses API takes it'));
}
