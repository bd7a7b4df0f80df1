"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.OpenAIStreamParser = void 0;
exports.createOpenAIStreamParser = createOpenAIStreamParser;
const mapper_utils_1 = require("../mapper-utils");
const response_mapper_1 = require("./response.mapper");
class OpenAIStreamParser {
    pendingFinish;
    usage;
    modelVersion;
    finished = false;
    /** Upstream tool index → our ordinal; some compatible servers omit `index`, so key by id as well. */
    tools = new Map();
    lastToolKey;
    push(event) {
        const data = event.data.trim();
        if (data === '[DONE]')
            return this.flush();
        const parsed = (0, mapper_utils_1.parseStreamJson)(data);
        if (!parsed.ok)
            return [parsed.event];
        const chunk = parsed.value;
        if (chunk.error !== undefined) {
            return [{ type: 'error', message: (0, response_mapper_1.extractOpenAIError)(chunk).message ?? 'upstream stream error', raw: data }];
        }
        const out = [];
        const model = (0, mapper_utils_1.str)(chunk.model);
        if (model)
            this.modelVersion = model;
        for (const c of (0, mapper_utils_1.arr)(chunk.choices)) {
            if (!(0, mapper_utils_1.isRecord)(c) || ((0, mapper_utils_1.num)(c.index) ?? 0) !== 0)
                continue;
            const delta = (0, mapper_utils_1.rec)(c.delta);
            const reasoning = (0, response_mapper_1.reasoningText)(delta);
            if (reasoning)
                out.push({ type: 'reasoning_delta', text: reasoning });
            const content = (0, mapper_utils_1.str)(delta.content);
            if (content)
                out.push({ type: 'text_delta', text: content });
            for (const call of (0, mapper_utils_1.arr)(delta.tool_calls))
                if ((0, mapper_utils_1.isRecord)(call))
                    this.toolCall(call, out);
            if (c.finish_reason !== null && c.finish_reason !== undefined)
                this.pendingFinish = (0, response_mapper_1.openaiFinishReason)(c.finish_reason);
        }
        if ((0, mapper_utils_1.isRecord)(chunk.usage))
            this.usage = (0, response_mapper_1.openaiUsage)(chunk.usage);
        // The usage chunk is the last one before [DONE]; no need to wait for [DONE] once both are known.
        if (this.pendingFinish && this.usage)
            out.push(...this.flush());
        return out;
    }
    end() {
        return this.flush();
    }
    toolCall(call, out) {
        const fn = (0, mapper_utils_1.rec)(call.function);
        const id = (0, mapper_utils_1.str)(call.id);
        const index = (0, mapper_utils_1.num)(call.index);
        const key = index !== undefined ? `i${index}` : id !== undefined ? `id${id}` : this.lastToolKey;
        if (key === undefined)
            return;
        let ordinal = this.tools.get(key);
        if (ordinal === undefined) {
            ordinal = this.tools.size;
            this.tools.set(key, ordinal);
            out.push({ type: 'tool_call_start', index: ordinal, callId: id ?? `call_${ordinal}`, name: (0, mapper_utils_1.str)(fn.name) ?? '' });
        }
        this.lastToolKey = key;
        const args = (0, mapper_utils_1.str)(fn.arguments);
        if (args)
            out.push({ type: 'tool_call_delta', index: ordinal, argumentsDelta: args });
    }
    flush() {
        if (this.finished)
            return [];
        this.finished = true;
        if (!this.pendingFinish)
            return [{ type: 'error', message: 'OpenAI stream ended without a finish_reason' }];
        const out = [];
        if (this.usage)
            out.push({ type: 'usage', usage: this.usage });
        out.push({ type: 'finish', finishReason: this.pendingFinish, ...(this.modelVersion !== undefined && { modelVersion: this.modelVersion }) });
        return out;
    }
}
exports.OpenAIStreamParser = OpenAIStreamParser;
function createOpenAIStreamParser() {
    return new OpenAIStreamParser();
}
