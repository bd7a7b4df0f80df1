"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SseParser = void 0;
exports.parseSse = parseSse;
class SseParser {
    decoder = new TextDecoder('utf-8');
    buffer = '';
    started = false;
    data = [];
    eventType;
    id;
    push(chunk) {
        let text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
        if (!this.started && text.length > 0) {
            this.started = true;
            if (text.charCodeAt(0) === 0xfeff)
                text = text.slice(1);
        }
        this.buffer += text;
        return this.drain(false);
    }
    /**
     * The stream ended. Unlike the spec (which drops an event not closed by a blank line) we dispatch it:
     * some OpenAI-compatible servers end on `data: [DONE]\n` without the blank line.
     */
    end() {
        this.buffer += this.decoder.decode();
        const events = this.drain(true);
        const last = this.dispatch();
        if (last)
            events.push(last);
        return events;
    }
    drain(final) {
        const events = [];
        let start = 0;
        for (;;) {
            const cr = this.buffer.indexOf('\r', start);
            const lf = this.buffer.indexOf('\n', start);
            let end;
            let next;
            if (cr === -1 && lf === -1)
                break;
            if (cr !== -1 && (lf === -1 || cr < lf)) {
                // A lone CR ends a line too; a CR at the end of the buffer may be the first half of CRLF.
                if (cr === this.buffer.length - 1 && !final)
                    break;
                end = cr;
                next = this.buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
            }
            else {
                end = lf;
                next = lf + 1;
            }
            const event = this.line(this.buffer.slice(start, end));
            if (event)
                events.push(event);
            start = next;
        }
        this.buffer = this.buffer.slice(start);
        if (final && this.buffer.length > 0) {
            const event = this.line(this.buffer);
            if (event)
                events.push(event);
            this.buffer = '';
        }
        return events;
    }
    line(line) {
        if (line === '')
            return this.dispatch();
        if (line.startsWith(':'))
            return undefined; // comment (keep-alive pings)
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? '' : line.slice(colon + 1);
        if (value.startsWith(' '))
            value = value.slice(1);
        switch (field) {
            case 'data':
                this.data.push(value);
                break;
            case 'event':
                this.eventType = value;
                break;
            case 'id':
                if (!value.includes('\0'))
                    this.id = value;
                break;
            default:
                break; // `retry` and unknown fields are ignored
        }
        return undefined;
    }
    dispatch() {
        const { data, eventType, id } = this;
        this.data = [];
        this.eventType = undefined;
        if (data.length === 0)
            return undefined;
        const event = { data: data.join('\n') };
        if (eventType)
            event.event = eventType;
        if (id !== undefined)
            event.id = id;
        return event;
    }
}
exports.SseParser = SseParser;
/** Parses a whole SSE transcript at once (tests, recorded streams). */
function parseSse(text) {
    const parser = new SseParser();
    return [...parser.push(text), ...parser.end()];
}
