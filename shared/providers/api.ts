/**
 * The only I/O of the provider layer: performs the `HttpRequestSpec`s the adapters describe, over one undici
 * `Agent` (a keep-alive connection pool per origin). Every failure leaves here as an `UpstreamError`.
 */
import { randomBytes } from 'node:crypto';
import { Agent, type Dispatcher } from 'undici';
import type { ErrorBodyExtractor, SseEvent } from './adapter.types';
import type { HttpRequestSpec } from './provider.types';
import { abortedError, isUpstreamError, parseRetryAfter, upstreamError, type UpstreamError } from './upstream-error';

export interface UpstreamClientOptions {
  /** Connection cap per origin (default: no cap; the catalog's `maxConcurrency` limits calls above this). */
  connectionsPerOrigin?: number;
  /** How long an idle connection is kept for reuse (default 10 s). */
  keepAliveTimeoutMs?: number;
}

export interface UpstreamCallOptions {
  /**
   * `request`: deadline for the whole exchange. `stream`: time to the response headers, then the longest
   * silence allowed between body chunks.
   */
  timeoutMs: number;
  /** The caller's cancellation (job cancelled, client gone); ends with an `UpstreamError` whose `aborted` is true. */
  signal?: AbortSignal;
  /** The provider kind's error-body reader (`adapter.extractError`), for messages of non-2xx replies. */
  extractError?: ErrorBodyExtractor;
}

export interface UpstreamReply {
  status: number;
  headers: Record<string, string>;
  /** The parsed body (a 2xx that is not JSON is a `malformed_reply`); undefined when the spec asked `replyAs: 'text'`. */
  json: unknown;
  text: string;
}

export interface UpstreamClient {
  request(baseUrl: string, spec: HttpRequestSpec, options: UpstreamCallOptions): Promise<UpstreamReply>;
  /**
   * Resolves once the status is known (non-2xx rejects with the error body read), so a caller can still fall
   * back before emitting anything; then yields SSE events as they arrive. Leaving the loop early closes the body.
   */
  stream(baseUrl: string, spec: HttpRequestSpec, options: UpstreamCallOptions): Promise<AsyncIterable<SseEvent>>;
  close(): Promise<void>;
}

const DEFAULT_KEEP_ALIVE_MS = 10_000;

export function createUpstreamClient(options: UpstreamClientOptions = {}): UpstreamClient {
  const keepAlive = options.keepAliveTimeoutMs ?? DEFAULT_KEEP_ALIVE_MS;
  const agent = new Agent({
    connections: options.connectionsPerOrigin ?? null,
    keepAliveTimeout: keepAlive,
    keepAliveMaxTimeout: Math.max(keepAlive, 1_000),
  });

  return {
    async request(baseUrl, spec, call) {
      // The call's deadline, as undici takes it: a signal.
      const deadline = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        deadline.abort();
      }, call.timeoutMs);
      // The caller's signal aborts the deadline too (a listener, not AbortSignal.any, whose WeakRefs hold each call's
      // signals and what their listeners capture until a full collection).
      const cancel = call.signal;
      const onCancel = () => deadline.abort(cancel!.reason);
      cancel?.addEventListener('abort', onCancel, { once: true });
      const failure = (error: unknown): UpstreamError => (timedOut ? upstreamError({ kind: 'timeout', timeoutMs: call.timeoutMs }, { cause: error }) : toUpstreamError(error, call));
      try {
        const res = await send(agent, baseUrl, spec, call, deadline.signal);
        const text = await res.body.text();
        const headers = flattenHeaders(res.headers);
        if (res.statusCode < 200 || res.statusCode >= 300) throw replyError(res.statusCode, headers, text, call);
        if (spec.replyAs === 'text') return { status: res.statusCode, headers, json: undefined, text };
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw upstreamError({ kind: 'malformed', message: `HTTP ${res.statusCode} reply is not JSON`, raw: text });
        }
        return { status: res.statusCode, headers, json, text };
      } catch (error) {
        throw failure(error);
      } finally {
        clearTimeout(timer);
        cancel?.removeEventListener('abort', onCancel);
      }
    },

    async stream(baseUrl, spec, call) {
      let res: Dispatcher.ResponseData;
      try {
        res = await send(agent, baseUrl, spec, call, call.signal);
      } catch (error) {
        throw toUpstreamError(error, call);
      }
      if (res.statusCode < 200 || res.statusCode >= 300) {
        let text = '';
        try {
          text = await res.body.text();
        } catch {
          // the status alone classifies it
        }
        throw replyError(res.statusCode, flattenHeaders(res.headers), text, call);
      }
      return sseEvents(res.body, call);
    },

    close: () => agent.close(),
  };
}

/** `http://host/openai/v1` + `/chat/completions` → origin `http://host`, path `/openai/v1/chat/completions` (a base query is kept). */
export function joinUpstreamUrl(baseUrl: string, path: string): { origin: string; path: string } {
  const base = new URL(baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  const relative = path.startsWith('/') ? path : `/${path}`;
  if (!base.search) return { origin: base.origin, path: basePath + relative };
  const [pathPart, query] = splitOnce(relative, '?');
  return { origin: base.origin, path: `${basePath}${pathPart}${base.search}${query ? `&${query}` : ''}` };
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

function send(agent: Agent, baseUrl: string, spec: HttpRequestSpec, call: UpstreamCallOptions, signal: AbortSignal | undefined): Promise<Dispatcher.ResponseData> {
  if (call.signal?.aborted) return Promise.reject(abortedError(call.signal.reason));
  const target = joinUpstreamUrl(baseUrl, spec.path);
  const headers = { ...spec.headers };
  let body: string | Buffer | undefined;
  if (spec.multipart) {
    const form = multipartBody(spec.multipart);
    // The boundary is ours: whatever content type the spec named (the adapters' JSON default) gives way to it.
    for (const name of Object.keys(headers)) if (name.toLowerCase() === 'content-type') delete headers[name];
    headers['content-type'] = form.contentType;
    body = form.body;
  } else if (spec.body !== undefined) {
    body = JSON.stringify(spec.body);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  return agent.request({
    origin: target.origin,
    path: target.path,
    method: spec.method,
    headers,
    body,
    signal,
    headersTimeout: call.timeoutMs,
    bodyTimeout: call.timeoutMs,
  });
}

/** A `multipart/form-data` body (RFC 7578): the text fields in order, then the file part, under a random boundary. */
export function multipartBody(form: NonNullable<HttpRequestSpec['multipart']>): { contentType: string; body: Buffer } {
  const boundary = `----switchyard${randomBytes(16).toString('hex')}`;
  const quoted = (value: string): string => value.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const parts: string[] = [];
  for (const [name, value] of Object.entries(form.fields)) {
    parts.push(`--${boundary}\r\ncontent-disposition: form-data; name="${quoted(name)}"\r\n\r\n${value}\r\n`);
  }
  const { file } = form;
  parts.push(`--${boundary}\r\ncontent-disposition: form-data; name="${quoted(file.field)}"; filename="${quoted(file.filename)}"\r\ncontent-type: ${file.contentType}\r\n\r\n`);
  const body = Buffer.concat([Buffer.from(parts.join(''), 'utf8'), Buffer.from(file.data, 'utf8'), Buffer.from(`\r\n--${boundary}--\r\n`, 'utf8')]);
  return { contentType: `multipart/form-data; boundary=${boundary}`, body };
}

async function* sseEvents(body: Dispatcher.ResponseData['body'], call: UpstreamCallOptions): AsyncGenerator<SseEvent> {
  const parser = new SseParser();
  const chunks = body[Symbol.asyncIterator]();
  let complete = false;
  try {
    for (;;) {
      let next: IteratorResult<unknown>;
      try {
        next = await chunks.next();
      } catch (error) {
        throw toUpstreamError(error, call);
      }
      if (next.done) break;
      const chunk = next.value;
      yield* parser.push(typeof chunk === 'string' ? chunk : (chunk as Uint8Array));
    }
    complete = true;
    yield* parser.end();
  } finally {
    // Leaving early (break, error, cancellation) frees the connection instead of draining the stream.
    if (!complete && !body.destroyed) body.destroy();
  }
}

function replyError(status: number, headers: Record<string, string>, text: string, call: UpstreamCallOptions): UpstreamError {
  const retryAfterMs = parseRetryAfter(headers['retry-after'], Date.now());
  const problem = { kind: 'reply' as const, status, body: text, ...(call.extractError && { extract: call.extractError }) };
  return upstreamError(problem, retryAfterMs === undefined ? {} : { retryAfterMs });
}

function toUpstreamError(error: unknown, call: UpstreamCallOptions): UpstreamError {
  if (isUpstreamError(error)) return error;
  if (call.signal?.aborted) return abortedError(error);
  return upstreamError({ kind: 'network', error }, { cause: error });
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/**
 * Incremental Server-Sent Events parser (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 * Pure: feed it chunks as they arrive (split anywhere, even inside a UTF-8 character or a CRLF), get whole events.
 */

export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private buffer = '';
  private started = false;
  private data: string[] = [];
  private eventType: string | undefined;
  private id: string | undefined;

  /** Takes a chunk; returns the events its lines complete (a blank line ends an event). */
  push(chunk: string | Uint8Array): SseEvent[] {
    let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    const buffer = this.buffer + text;
    const events: SseEvent[] = [];
    let start = 0;
    // The next CR, searched again only once passed: a chunk of many LF-ended lines is scanned for CRs once, not per line.
    let cr = buffer.indexOf('\r');
    for (;;) {
      if (cr !== -1 && cr < start) cr = buffer.indexOf('\r', start);
      const lf = buffer.indexOf('\n', start);
      if (cr === -1 && lf === -1) break;
      let end = lf;
      let next = lf + 1;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A lone CR ends a line too; a CR at the end of the buffer may be the first half of CRLF.
        if (cr === buffer.length - 1) break;
        end = cr;
        next = buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
      }
      const line = buffer.slice(start, end);
      start = next;
      if (line === '') {
        // Dispatch: the fields gathered so far make an event, if they have data.
        if (this.data.length > 0) {
          const event: SseEvent = { data: this.data.join('\n') };
          if (this.eventType) event.event = this.eventType;
          if (this.id !== undefined) event.id = this.id;
          events.push(event);
        }
        this.data = [];
        this.eventType = undefined;
        continue;
      }
      if (line.startsWith(':')) continue; // comment (keep-alive pings)
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.eventType = value;
      else if (field === 'id' && !value.includes('\0')) this.id = value;
      // `retry` and unknown fields are ignored
    }
    this.buffer = buffer.slice(start);
    return events;
  }

  /**
   * The stream ended. Unlike the spec (which drops an event not closed by a blank line) we dispatch it, as if the
   * stream had ended with a blank line: some OpenAI-compatible servers end on `data: [DONE]\n` without it.
   */
  end(): SseEvent[] {
    return this.push(`${this.decoder.decode()}\n\n`);
  }
}

/** Parses a whole SSE transcript at once (tests, recorded streams). */
export function parseSse(text: string): SseEvent[] {
  const parser = new SseParser();
  return [...parser.push(text), ...parser.end()];
}
