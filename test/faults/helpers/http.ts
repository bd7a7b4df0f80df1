/** A client that never throws: every reply (or connection failure) becomes a status the suite can count. */

export interface Reply {
  /** HTTP status; 0 when the connection failed or was refused, -1 when the client gave up (timeout). */
  status: number;
  ms: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  text: string;
  headers: Headers | null;
  error?: string;
}

export async function call(method: string, url: string, body: unknown, headers: Record<string, string> = {}, timeoutMs = 60_000): Promise<Reply> {
  const started = Date.now();
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const res = await fetch(url, {
      method,
      headers: { 'Content-Type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: controller.signal,
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON (SSE, HTML): keep the text
    }
    return { status: res.status, ms: Date.now() - started, json, text, headers: res.headers };
  } catch (e) {
    const aborted = controller.signal.aborted;
    return { status: aborted ? -1 : 0, ms: Date.now() - started, json: null, text: '', headers: null, error: (e as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

export const post = (url: string, body: unknown, headers?: Record<string, string>, timeoutMs?: number) => call('POST', url, body, headers, timeoutMs);
export const get = (url: string, headers?: Record<string, string>, timeoutMs?: number) => call('GET', url, undefined, headers, timeoutMs);

export interface StreamReply {
  status: number;
  /** SSE event names in order (`data:`-only frames count as `message`). */
  events: string[];
  deltas: number;
  text: string;
  /** The last `response.completed` / `response.failed` payload (chat completions: the usage chunk, or the error chunk). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  final: any;
  /**
   * How the stream ended: `completed` (`response.completed`, or chat's `[DONE]`), `failed` (`response.failed`, `error`,
   * or chat's error chunk), or undefined when it closed without a final event.
   */
  ending?: 'completed' | 'failed';
  /** The generation's id, as the first event that carries one names it. */
  id?: string;
  /** When the stream ended (ms since the epoch). */
  endedAt: number;
  /** True when the client hung up on purpose. */
  leftEarly: boolean;
  error?: string;
}

/**
 * Streams a POST (responses or chat completions with stream: true) and reads the events; with `leaveAfter` the
 * client hangs up after that many content deltas.
 */
export async function stream(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  opts: { leaveAfter?: number; timeoutMs?: number; onDelta?: (text: string) => void; /** The client hangs up when this resolves (if still streaming). */ leaveWhen?: Promise<unknown> } = {},
): Promise<StreamReply> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 60_000);
  const out: StreamReply = { status: 0, events: [], deltas: 0, text: '', final: null, leftEarly: false, endedAt: 0 };
  void opts.leaveWhen?.then(() => {
    if (out.endedAt || out.ending) return;
    out.leftEarly = true;
    controller.abort();
  });
  try {
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body), signal: controller.signal });
    out.status = res.status;
    if (!res.ok || !res.body) {
      out.text = await res.text();
      return out;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let at: number;
      while ((at = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, at);
        buf = buf.slice(at + 2);
        const name = /^event: (.*)$/m.exec(frame)?.[1] ?? 'message';
        const data = /^data: (.*)$/m.exec(frame)?.[1];
        out.events.push(name);
        // Responses deltas, or chat completion chunks with content.
        const delta =
          name === 'response.output_text.delta' && data
            ? (JSON.parse(data) as { delta: string }).delta
            : name === 'message' && data && data !== '[DONE]'
              ? (JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content
              : undefined;
        if (delta) {
          out.deltas++;
          out.text += delta;
          opts.onDelta?.(delta);
        }
        if ((name === 'response.completed' || name === 'response.failed' || name === 'error') && data) {
          out.final = JSON.parse(data);
          out.ending = name === 'response.completed' ? 'completed' : 'failed';
        }
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const parsed: any = data && data !== '[DONE]' ? JSON.parse(data) : undefined;
        out.id ??= parsed?.response?.id ?? (name === 'message' ? parsed?.id : undefined);
        if (name === 'message' && data === '[DONE]') out.ending = 'completed';
        if (name === 'message' && (parsed?.usage || parsed?.error)) out.final = parsed;
        if (name === 'message' && parsed?.error) out.ending = 'failed';
        if (opts.leaveAfter !== undefined && out.deltas >= opts.leaveAfter) {
          out.leftEarly = true;
          controller.abort();
          await reader.cancel().catch(() => undefined);
          return out;
        }
      }
    }
    return out;
  } catch (e) {
    if (!out.leftEarly) out.error = (e as Error).message;
    return out;
  } finally {
    clearTimeout(timer);
    out.endedAt = Date.now();
  }
}

/** Replies counted by status, for the report ("503×4, 200×96"). */
export class Tally {
  readonly counts = new Map<string, number>();
  total = 0;

  /**
   * A stream that ended with `response.failed` (or `error`) counts as "200 response.failed", one that ended with chat's
   * error chunk as "200 error chunk", one that closed without a final event as "200 no final event".
   */
  add(r: { status: number; events?: string[]; ending?: StreamReply['ending']; leftEarly?: boolean }): void {
    const last = r.events?.[r.events.length - 1];
    const failed = last === 'response.failed' || last === 'error';
    const unfinished = r.status === 200 && r.events !== undefined && !r.ending && !r.leftEarly;
    const k =
      r.status === 0
        ? 'conn-refused/reset'
        : r.status === -1
          ? 'client-timeout'
          : failed
            ? `${r.status} ${last}`
            : r.ending === 'failed'
              ? `${r.status} error chunk`
              : unfinished
                ? `${r.status} no final event`
                : String(r.status);
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
    this.total++;
  }

  addAll(rs: Array<Parameters<Tally['add']>[0]>): void {
    for (const r of rs) this.add(r);
  }

  count(status: number | string): number {
    return this.counts.get(String(status)) ?? 0;
  }

  /** Everything but 2xx, e.g. "503×4, 402×1", or "none". */
  errors(): string {
    const parts = [...this.counts].filter(([k]) => !/^2\d\d$/.test(k)).sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}×${n}`);
    return parts.length ? parts.join(', ') : 'none';
  }

  summary(): string {
    return [...this.counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k}×${n}`).join(', ');
  }
}
