"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.BackgroundStreams = void 0;
const event_stream_1 = require("./event-stream");
const formats_1 = require("../../shared/formats");
const response_stream_log_1 = require("./response-stream-log");
const stored_responses_1 = require("./stored-responses");
/** How often a reader looks for new events, and how long it waits for a response that never ends. */
const POLL_MS = 50;
const READ_LIMIT_MS = 60 * 60 * 1000;
/** A reader that sees no new event for this long checks the record (the process relaying the stream may be gone). */
const STALL_MS = 10_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** The error a cancelled response's stream ends with (as a cancelled foreground stream does). */
const CANCELLED = { code: 'REQUEST_TIMEOUT', message: 'The response was cancelled' };
/**
 * Background responses as Server-Sent Events (OpenAI's `background: true` with `stream: true`, and
 * GET /v1/responses/{id}?stream=true&starting_after=N). One relay per streamed background response turns the worker's
 * messages into events and appends them to the `ResponseStreamLog`, whether or not anyone is connected; every reader
 * (the creating request and any resume) tails the log. A background response created without `stream` has no live
 * events: its stream is the same fixed sequence rebuilt from the record, once it has ended.
 */
class BackgroundStreams {
    db;
    log;
    logger;
    clock;
    constructor(db, log, logger, clock) {
        this.db = db;
        this.log = log;
        this.logger = logger;
        this.clock = clock;
    }
    /** Starts relaying a streamed background response (not awaited: it outlives the request, whose trace id it logs). */
    relay(sub, f, traceId) {
        void this.runRelay(sub, f)
            .catch((e) => this.logger.error('background stream relay failed', { err: e, generationId: sub.id, trace_id: traceId }))
            .finally(() => sub.detach());
    }
    async runRelay(sub, f) {
        const id = sub.id;
        await this.log.append(id, f.start());
        const deadline = Date.now() + READ_LIMIT_MS;
        let lastSeq = 0;
        let restarted = false;
        while (Date.now() < deadline) {
            const m = await sub.mailbox.next(STALL_MS);
            if (!m) {
                const g = await this.db.generation.findUnique({ where: { id } });
                if (!g || (0, stored_responses_1.hasEnded)(g))
                    return this.log.append(id, g ? this.ending(f, g) : f.fail(CANCELLED));
                continue;
            }
            if (m.type === 'delta') {
                // A re-run job (its worker died) numbers from the start again: its text is already out, the final event
                // carries the whole answer.
                if (m.seq <= lastSeq)
                    restarted = true;
                lastSeq = m.seq;
                if (!restarted)
                    await this.log.append(id, f.push(m.event));
            }
            else if (m.type === 'done') {
                const p = m.payload;
                return this.log.append(id, this.completion(f, p));
            }
            else if (m.type === 'failed') {
                const p = m.payload;
                return this.log.append(id, f.fail((0, stored_responses_1.publicError)(m.error), p ? { usage: (0, stored_responses_1.usageOf)(p), model: p.model } : undefined));
            }
            else if (m.type === 'cancelled') {
                return this.log.append(id, f.fail((0, stored_responses_1.publicError)(CANCELLED)));
            }
        }
    }
    completion(f, p) {
        return f.complete({ result: p.result, usage: (0, stored_responses_1.usageOf)(p), model: p.model, completedAt: (0, stored_responses_1.unix)(this.clock()), status: (0, stored_responses_1.finishedStatus)(p.result) });
    }
    /** The closing events of an ended response, from its record. */
    ending(f, g) {
        const p = g.result;
        if (g.status === 'completed' && p)
            return f.complete({ result: p.result, usage: (0, stored_responses_1.usageOf)(p), model: p.model, completedAt: g.completedAt ? (0, stored_responses_1.unix)(g.completedAt) : undefined, status: (0, stored_responses_1.finishedStatus)(p.result) });
        if (g.status === 'cancelled')
            return f.fail((0, stored_responses_1.publicError)(CANCELLED));
        return f.fail(g.error ? (0, stored_responses_1.publicError)(g.error) : { code: 'INTERNAL_ERROR', message: 'The response failed' }, p ? { usage: (0, stored_responses_1.usageOf)(p), model: p.model } : undefined);
    }
    /** The stream base of a stored response, as its creating request built it. */
    static base(g) {
        const body = (0, stored_responses_1.storedRequest)(g).body;
        return { id: g.id, createdAt: (0, stored_responses_1.unix)(g.createdAt), model: (0, stored_responses_1.askedModel)(body), request: body };
    }
    /** Serves the events after `after` of a background response until its final event (or the client leaves). */
    async serve(res, g, after) {
        const gone = (0, event_stream_1.openEventStream)(res);
        const write = (events) => {
            const out = events.filter((e) => e.data.sequence_number > after);
            if (!gone() && out.length)
                res.write(out.map(formats_1.encodeSse).join(''));
        };
        try {
            if ((0, stored_responses_1.storedRequest)(g).body.stream === true)
                await this.tail(g.id, after, write, gone);
            else
                await this.rebuild(g, write, gone);
        }
        finally {
            if (!gone())
                res.end();
        }
    }
    /** A streamed background response: its logged events, live until the final one. */
    async tail(id, after, write, gone) {
        let next = after + 1;
        let quietSince = Date.now();
        const deadline = Date.now() + READ_LIMIT_MS;
        while (!gone() && Date.now() < deadline) {
            const events = await this.log.read(id, next);
            if (events.length) {
                write(events);
                next += events.length;
                quietSince = Date.now();
                if (events.some((e) => response_stream_log_1.TERMINAL_EVENTS.has(e.event)))
                    return;
                continue;
            }
            if (Date.now() - quietSince >= STALL_MS) {
                quietSince = Date.now();
                const g = await this.db.generation.findUnique({ where: { id } });
                // The response ended but its final event never reached the log (the relaying process stopped): end with
                // the record's state.
                if (!g || (0, stored_responses_1.hasEnded)(g)) {
                    if (g)
                        write([this.finalFromRecord(g, next)]);
                    return;
                }
            }
            await sleep(POLL_MS);
        }
    }
    finalFromRecord(g, sequence) {
        const response = (0, stored_responses_1.responseObjectOf)(g);
        const type = response.status === 'completed' ? 'response.completed' : response.status === 'incomplete' ? 'response.incomplete' : 'response.failed';
        return { event: type, data: { type, response, sequence_number: sequence } };
    }
    /** A background response created without `stream`: the fixed event sequence of its record, once it has ended. */
    async rebuild(g, write, gone) {
        const f = (0, formats_1.createResponsesStreamFormatter)(BackgroundStreams.base(g));
        write(f.start());
        const deadline = Date.now() + READ_LIMIT_MS;
        let current = g;
        while (current && !(0, stored_responses_1.hasEnded)(current) && !gone() && Date.now() < deadline) {
            await sleep(POLL_MS * 4);
            current = await this.db.generation.findUnique({ where: { id: g.id } });
        }
        if (!current || gone())
            return;
        const p = current.result;
        if (p)
            write(replay(f, (0, stored_responses_1.withPublicIds)(g.id, p.result)));
        write(this.ending(f, current));
    }
}
exports.BackgroundStreams = BackgroundStreams;
/** The deltas a result would have streamed: each output item whole, in order. */
function replay(f, result) {
    const events = [];
    result.output.forEach((o, i) => {
        if (o.type === 'message')
            events.push(...f.push({ type: 'text_delta', text: o.content.map((c) => c.text).join('') }));
        else if (o.type === 'reasoning')
            events.push(...f.push({ type: 'reasoning_delta', text: o.summary.map((s) => s.text).join('') }));
        else {
            events.push(...f.push({ type: 'tool_call_start', index: i, callId: o.call_id, name: o.name }));
            events.push(...f.push({ type: 'tool_call_delta', index: i, argumentsDelta: o.arguments }));
        }
    });
    return events;
}
