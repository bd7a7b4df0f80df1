import type { Response } from 'express';
import { openEventStream, replayEvents } from './text-replies';
import type { Db } from '../../shared/db/client';
import type { Generation } from '../../shared/db/generated/client';
import { createResponsesStreamFormatter, encodeSse, type ResponsesStreamBase, type ResponsesStreamFormatter, type SseEvent } from '../../shared/formats/responses-stream.formatter';
import type { Logger } from '../../shared/logger';
import type { TextDonePayload } from '../../shared/queue/job-catalog';
import type { Submission } from './generation-order';
import { TERMINAL_EVENTS, type ResponseStreamLog } from './response-stream-log';
import { finishedStatus, hasEnded, publicError, responseObjectOf, storedRequest, unix, usageOf, withPublicIds } from './stored-responses';
import type { StoredError } from '../../shared/errors/app-error';
import { askedModel, generationById } from '../../shared/db/generation-reads';

/** How often a reader looks for new events, and how long it waits for a response that never ends. */
const POLL_MS = 50;
const READ_LIMIT_MS = 60 * 60 * 1000;
/** A reader that sees no new event for this long checks the record (the process relaying the stream may be gone). */
const STALL_MS = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The error a cancelled response's stream ends with (as a cancelled foreground stream does). */
const CANCELLED: StoredError = { code: 'REQUEST_TIMEOUT', message: 'The response was cancelled' };

/**
 * Background responses as Server-Sent Events (OpenAI's `background: true` with `stream: true`, and
 * GET /v1/responses/{id}?stream=true&starting_after=N). One relay per streamed background response turns the worker's
 * messages into events and appends them to the `ResponseStreamLog`, whether or not anyone is connected; every reader
 * (the creating request and any resume) tails the log. A background response created without `stream` has no live
 * events: its stream is the same fixed sequence rebuilt from the record, once it has ended.
 */
export class BackgroundStreams {
  constructor(
    private readonly db: Db,
    private readonly log: ResponseStreamLog,
    private readonly logger: Logger,
    private readonly clock: () => Date,
  ) {}

  /** Drops a response's relayed events (its text: DELETE /v1/responses/{id}). */
  forget(id: string): Promise<void> {
    return this.log.forget(id);
  }

  /** Starts relaying a streamed background response (not awaited: it outlives the request, whose trace id it logs). */
  relay(sub: Submission, f: ResponsesStreamFormatter, traceId: string): void {
    void this.runRelay(sub, f)
      .catch((e) => this.logger.error('background stream relay failed', { err: e, generationId: sub.id, trace_id: traceId }))
      .finally(() => sub.detach());
  }

  private async runRelay(sub: Submission, f: ResponsesStreamFormatter): Promise<void> {
    const id = sub.id;
    await this.log.append(id, f.start());
    const deadline = Date.now() + READ_LIMIT_MS;
    let lastSeq = 0;
    let restarted = false;
    while (Date.now() < deadline) {
      const m = await sub.mailbox!.next(STALL_MS);
      if (!m) {
        const g = await generationById(this.db, id, (where) => this.db.generation.findFirst({ where }));
        if (!g || hasEnded(g)) return this.log.append(id, g ? this.ending(f, g) : f.fail(CANCELLED));
        continue;
      }
      if (m.type === 'delta') {
        // A re-run job (its worker died) numbers from the start again: its text is already out, the final event
        // carries the whole answer.
        if (m.seq <= lastSeq) restarted = true;
        lastSeq = m.seq;
        if (!restarted) await this.log.append(id, f.push(m.event));
      } else if (m.type === 'done') {
        const p = m.payload as TextDonePayload;
        return this.log.append(id, this.completion(f, p));
      } else if (m.type === 'failed') {
        const p = m.payload as TextDonePayload | undefined;
        return this.log.append(id, f.fail(publicError(m.error as StoredError), p ? { usage: usageOf(p), model: p.model } : undefined));
      } else if (m.type === 'cancelled') {
        const p = m.payload as TextDonePayload | undefined;
        return this.log.append(id, f.fail(publicError(CANCELLED), p ? { usage: usageOf(p), model: p.model } : undefined));
      }
    }
  }

  private completion(f: ResponsesStreamFormatter, p: TextDonePayload): SseEvent[] {
    return f.complete({ result: p.result, usage: usageOf(p), model: p.model, completedAt: unix(this.clock()), status: finishedStatus(p.result) });
  }

  /** The closing events of an ended response, from its record. */
  private ending(f: ResponsesStreamFormatter, g: Generation): SseEvent[] {
    const p = g.result as unknown as TextDonePayload | null;
    if (g.status === 'completed' && p) return f.complete({ result: p.result, usage: usageOf(p), model: p.model, completedAt: g.completedAt ? unix(g.completedAt) : undefined, status: finishedStatus(p.result) });
    if (g.status === 'cancelled') return f.fail(publicError(CANCELLED), p ? { usage: usageOf(p), model: p.model } : undefined);
    return f.fail(g.error ? publicError(g.error as unknown as StoredError) : { code: 'INTERNAL_ERROR', message: 'The response failed' }, p ? { usage: usageOf(p), model: p.model } : undefined);
  }

  /** The stream base of a stored response, as its creating request built it. */
  static base(g: Generation): ResponsesStreamBase {
    const body = storedRequest(g).body;
    return { id: g.id, createdAt: unix(g.createdAt), model: askedModel(g), request: body };
  }

  /** Serves the events after `after` of a background response until its final event (or the client leaves). */
  async serve(res: Response, g: Generation, after: number): Promise<void> {
    const gone = openEventStream(res);
    const write = (events: SseEvent[]) => {
      const out = events.filter((e) => e.data.sequence_number > after);
      if (!gone() && out.length) res.write(out.map(encodeSse).join(''));
    };
    try {
      if (storedRequest(g).body.stream === true) await this.tail(g.id, after, write, gone);
      else await this.rebuild(g, write, gone);
    } finally {
      if (!gone()) res.end();
    }
  }

  /** A streamed background response: its logged events, live until the final one. */
  private async tail(id: string, after: number, write: (e: SseEvent[]) => void, gone: () => boolean): Promise<void> {
    let next = after + 1;
    let quietSince = Date.now();
    const deadline = Date.now() + READ_LIMIT_MS;
    while (!gone() && Date.now() < deadline) {
      const events = await this.log.read(id, next);
      if (events.length) {
        write(events);
        next += events.length;
        quietSince = Date.now();
        if (events.some((e) => TERMINAL_EVENTS.has(e.event))) return;
        continue;
      }
      if (Date.now() - quietSince >= STALL_MS) {
        quietSince = Date.now();
        const g = await generationById(this.db, id, (where) => this.db.generation.findFirst({ where }));
        // The response ended but its final event never reached the log (the relaying process stopped): end with
        // the record's state.
        if (!g || hasEnded(g)) {
          if (g) write([this.finalFromRecord(g, next)]);
          return;
        }
      }
      await sleep(POLL_MS);
    }
  }

  private finalFromRecord(g: Generation, sequence: number): SseEvent {
    const response = responseObjectOf(g);
    const type = response.status === 'completed' ? 'response.completed' : response.status === 'incomplete' ? 'response.incomplete' : 'response.failed';
    return { event: type, data: { type, response, sequence_number: sequence } };
  }

  /** A background response created without `stream`: the fixed event sequence of its record, once it has ended. */
  private async rebuild(g: Generation, write: (e: SseEvent[]) => void, gone: () => boolean): Promise<void> {
    const f = createResponsesStreamFormatter(BackgroundStreams.base(g));
    write(f.start());
    const deadline = Date.now() + READ_LIMIT_MS;
    let current: Generation | null = g;
    while (current && !hasEnded(current) && !gone() && Date.now() < deadline) {
      await sleep(POLL_MS * 4);
      current = await generationById(this.db, g.id, (where) => this.db.generation.findFirst({ where }));
    }
    if (!current || gone()) return;
    const p = current.result as unknown as TextDonePayload | null;
    if (p) write(replayEvents(withPublicIds(g.id, p.result)).flatMap((e) => f.push(e)));
    write(this.ending(f, current));
  }
}

