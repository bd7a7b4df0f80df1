"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.createResponsesStreamFormatter = createResponsesStreamFormatter;
exports.encodeSse = encodeSse;
const format_utils_1 = require("./format-utils");
const response_object_mapper_1 = require("./response-object.mapper");
function createResponsesStreamFormatter(base) {
    const idSuffix = base.id.replace(/^resp_/, '');
    const perKind = { msg: 0, fc: 0, rs: 0 };
    const newId = base.newId ?? ((prefix) => `${prefix}_${idSuffix}_${perKind[prefix]++}`);
    const items = [];
    const byToolIndex = new Map();
    const reported = {};
    let sequence = 0;
    let started = false;
    let ended = false;
    /** The open message or reasoning item that text deltas extend. */
    let current;
    const ev = (type, fields) => ({
        event: type,
        data: { type, ...fields, sequence_number: sequence++ },
    });
    const snapshot = (status, output, extra = {}) => (0, response_object_mapper_1.responseEnvelope)({ ...base, ...extra }, status, output);
    function start() {
        if (started)
            return [];
        started = true;
        const response = snapshot('in_progress', []);
        return [ev('response.created', { response }), ev('response.in_progress', { response })];
    }
    function publicItem(item, status) {
        switch (item.kind) {
            case 'message':
                return { type: 'message', id: item.id, status, role: 'assistant', content: [textPart(item)] };
            case 'function_call':
                return { type: 'function_call', id: item.id, call_id: item.callId, name: item.name, arguments: item.text, status };
            case 'reasoning':
                return { type: 'reasoning', id: item.id, summary: [{ type: 'summary_text', text: item.text }], status };
        }
    }
    const textPart = (item) => (0, response_object_mapper_1.outputTextPart)(item.text, item.logprobs);
    function open(kind, fields = {}) {
        const events = closeCurrent();
        const outputIndex = items.length;
        const prefix = kind === 'message' ? 'msg' : kind === 'function_call' ? 'fc' : 'rs';
        const item = { kind, id: newId(prefix, outputIndex), outputIndex, text: '', callId: '', name: '', open: true, matched: false, ...fields };
        items.push(item);
        const added = kind === 'message'
            ? { type: 'message', id: item.id, status: 'in_progress', role: 'assistant', content: [] }
            : kind === 'function_call'
                ? { type: 'function_call', id: item.id, call_id: item.callId, name: item.name, arguments: '', status: 'in_progress' }
                : { type: 'reasoning', id: item.id, summary: [], status: 'in_progress' };
        events.push(ev('response.output_item.added', { output_index: outputIndex, item: added }));
        const at = { item_id: item.id, output_index: outputIndex };
        if (kind === 'message') {
            events.push(ev('response.content_part.added', { ...at, content_index: 0, part: (0, response_object_mapper_1.outputTextPart)('') }));
        }
        else if (kind === 'reasoning') {
            events.push(ev('response.reasoning_summary_part.added', { ...at, summary_index: 0, part: { type: 'summary_text', text: '' } }));
        }
        if (kind !== 'function_call')
            current = item;
        return { item, events };
    }
    function close(item, status = 'completed') {
        if (!item.open)
            return [];
        item.open = false;
        if (current === item)
            current = undefined;
        const at = { item_id: item.id, output_index: item.outputIndex };
        const events = [];
        if (item.kind === 'message') {
            const logprobs = item.logprobs ? (0, format_utils_1.publicLogprobs)(item.logprobs) : [];
            events.push(ev('response.output_text.done', { ...at, content_index: 0, text: item.text, logprobs }));
            events.push(ev('response.content_part.done', { ...at, content_index: 0, part: textPart(item) }));
        }
        else if (item.kind === 'reasoning') {
            events.push(ev('response.reasoning_summary_text.done', { ...at, summary_index: 0, text: item.text }));
            events.push(ev('response.reasoning_summary_part.done', { ...at, summary_index: 0, part: { type: 'summary_text', text: item.text } }));
        }
        else {
            events.push(ev('response.function_call_arguments.done', { ...at, name: item.name, arguments: item.text }));
        }
        events.push(ev('response.output_item.done', { output_index: item.outputIndex, item: publicItem(item, status) }));
        return events;
    }
    function closeCurrent() {
        return current ? close(current) : [];
    }
    function push(event) {
        if (ended)
            return [];
        const events = start();
        switch (event.type) {
            case 'text_delta':
            case 'reasoning_delta': {
                if (event.text === '')
                    break;
                const kind = event.type === 'text_delta' ? 'message' : 'reasoning';
                let item = current;
                if (!item || item.kind !== kind) {
                    const opened = open(kind);
                    events.push(...opened.events);
                    item = opened.item;
                }
                item.text += event.text;
                const at = { item_id: item.id, output_index: item.outputIndex };
                events.push(kind === 'message'
                    ? ev('response.output_text.delta', { ...at, content_index: 0, delta: event.text, logprobs: [] })
                    : ev('response.reasoning_summary_text.delta', { ...at, summary_index: 0, delta: event.text }));
                break;
            }
            case 'tool_call_start': {
                const opened = open('function_call', { callId: event.callId, name: event.name });
                byToolIndex.set(event.index, opened.item);
                events.push(...opened.events);
                break;
            }
            case 'tool_call_delta': {
                const item = byToolIndex.get(event.index);
                // A delta for a call that never started has no item to belong to (the result still carries the call).
                if (!item || !item.open || event.argumentsDelta === '')
                    break;
                item.text += event.argumentsDelta;
                events.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index: item.outputIndex, delta: event.argumentsDelta }));
                break;
            }
            case 'usage':
                reported.usage = event.usage;
                break;
            case 'finish':
                reported.finishReason = event.finishReason;
                break;
            case 'error':
                // The caller ends the stream with `fail()`.
                break;
        }
        return events;
    }
    /** Gives each result item the streamed item it was (same kind, same call id for calls), or a new one. */
    function reconcile(result) {
        const events = [];
        let logprobsGiven = false;
        for (const r of result.output) {
            const candidates = items.filter((i) => !i.matched && i.kind === r.type);
            let item = r.type === 'function_call' ? (candidates.find((i) => i.callId === r.call_id) ?? candidates[0]) : candidates[0];
            if (!item) {
                const opened = open(r.type, r.type === 'function_call' ? { callId: r.call_id, name: r.name } : {});
                events.push(...opened.events);
                item = opened.item;
            }
            item.matched = true;
            if (r.type === 'message') {
                item.text = r.content.map((c) => c.text).join('');
                if (!logprobsGiven && result.logprobs)
                    item.logprobs = result.logprobs;
                logprobsGiven = true;
            }
            else if (r.type === 'function_call') {
                Object.assign(item, { callId: r.call_id, name: r.name, text: r.arguments });
            }
            else {
                item.text = r.summary.map((s) => s.text).join('');
            }
        }
        return events;
    }
    function complete(final) {
        if (ended)
            return [];
        const events = start();
        events.push(...reconcile(final.result));
        const status = final.status ?? 'completed';
        const itemStatus = status === 'incomplete' ? 'incomplete' : 'completed';
        for (const item of items)
            events.push(...close(item, item.kind === 'message' ? itemStatus : 'completed'));
        ended = true;
        const output = items.map((i) => publicItem(i, i.kind === 'message' ? itemStatus : 'completed'));
        const reason = (0, response_object_mapper_1.incompleteReason)(final.result);
        const response = (0, response_object_mapper_1.responseEnvelope)({ ...base, model: final.model, usage: final.usage, completedAt: final.completedAt ?? base.completedAt ?? null }, status, output, reason ? { reason } : null);
        events.push(ev(status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response }));
        return events;
    }
    function fail(error, partial = {}) {
        if (ended)
            return [];
        const events = start();
        ended = true;
        const output = items.map((i) => publicItem(i, i.open ? 'incomplete' : 'completed'));
        const response = snapshot('failed', output, { error, usage: partial.usage ?? null, ...(partial.model && { model: partial.model }) });
        events.push(ev('response.failed', { response }));
        return events;
    }
    return { start, push, complete, fail, reported };
}
/** One event on the wire. */
function encodeSse(event) {
    return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
