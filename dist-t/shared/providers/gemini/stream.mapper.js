"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.GeminiStreamParser = void 0;
exports.createGeminiStreamParser = createGeminiStreamParser;
const mapper_utils_1 = require("../mapper-utils");
const response_mapper_1 = require("./response.mapper");
class GeminiStreamParser {
    usage;
    modelVersion;
    calls = 0;
    finished = false;
    push(event) {
        const parsed = (0, mapper_utils_1.parseStreamJson)(event.data);
        if (!parsed.ok)
            return [parsed.event];
        const chunk = parsed.value;
        if (chunk.error !== undefined)
            return [{ type: 'error', message: (0, response_mapper_1.extractGeminiError)(chunk).message ?? 'Gemini stream error', raw: event.data }];
        const out = [];
        const model = (0, mapper_utils_1.str)(chunk.modelVersion);
        if (model)
            this.modelVersion = model;
        if ((0, mapper_utils_1.isRecord)(chunk.usageMetadata))
            this.usage = (0, response_mapper_1.geminiUsage)(chunk.usageMetadata);
        const responseId = (0, mapper_utils_1.str)(chunk.responseId) ?? 'gemini';
        const candidate = (0, mapper_utils_1.arr)(chunk.candidates)[0];
        if (!(0, mapper_utils_1.isRecord)(candidate)) {
            // A blocked prompt: promptFeedback and no candidates.
            if ((0, mapper_utils_1.isRecord)(chunk.promptFeedback) && chunk.promptFeedback.blockReason !== undefined)
                out.push(...this.finish('content_filter'));
            return out;
        }
        for (const part of (0, mapper_utils_1.arr)((0, mapper_utils_1.rec)(candidate.content).parts)) {
            if (!(0, mapper_utils_1.isRecord)(part))
                continue;
            if ((0, mapper_utils_1.isRecord)(part.functionCall)) {
                const fc = part.functionCall;
                const index = this.calls++;
                out.push({ type: 'tool_call_start', index, callId: (0, response_mapper_1.geminiCallId)(fc, responseId, index), name: (0, mapper_utils_1.str)(fc.name) ?? '' });
                out.push({ type: 'tool_call_delta', index, argumentsDelta: JSON.stringify(fc.args ?? {}) });
            }
            else if (typeof part.text === 'string' && part.text !== '') {
                out.push(part.thought === true ? { type: 'reasoning_delta', text: part.text } : { type: 'text_delta', text: part.text });
            }
        }
        if (typeof candidate.finishReason === 'string')
            out.push(...this.finish((0, response_mapper_1.geminiFinishReason)(candidate.finishReason, this.calls > 0)));
        return out;
    }
    end() {
        if (this.finished)
            return [];
        this.finished = true;
        return [{ type: 'error', message: 'Gemini stream ended without a finishReason' }];
    }
    finish(reason) {
        if (this.finished)
            return [];
        this.finished = true;
        const out = [];
        if (this.usage)
            out.push({ type: 'usage', usage: this.usage });
        out.push({ type: 'finish', finishReason: reason, ...(this.modelVersion !== undefined && { modelVersion: this.modelVersion }) });
        return out;
    }
}
exports.GeminiStreamParser = GeminiStreamParser;
function createGeminiStreamParser() {
    return new GeminiStreamParser();
}
