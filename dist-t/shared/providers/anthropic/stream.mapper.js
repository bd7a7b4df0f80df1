"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.AnthropicStreamParser = void 0;
exports.createAnthropicStreamParser = createAnthropicStreamParser;
const mapper_utils_1 = require("../mapper-utils");
const response_mapper_1 = require("./response.mapper");
const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'];
class AnthropicStreamParser {
    /** Raw usage fields as Anthropic reports them; message_delta's values are cumulative and win. */
    usage = {};
    modelVersion;
    pendingFinish;
    finished = false;
    /** Content block index → tool ordinal (text and thinking blocks share the block numbering). */
    tools = new Map();
    push(event) {
        const parsed = (0, mapper_utils_1.parseStreamJson)(event.data);
        if (!parsed.ok)
            return [parsed.event];
        const data = parsed.value;
        const type = (0, mapper_utils_1.str)(data.type) ?? event.event;
        switch (type) {
            case 'message_start': {
                const message = (0, mapper_utils_1.rec)(data.message);
                const model = (0, mapper_utils_1.str)(message.model);
                if (model)
                    this.modelVersion = model;
                this.takeUsage(message.usage);
                return [];
            }
            case 'content_block_start': {
                const block = (0, mapper_utils_1.rec)(data.content_block);
                const index = (0, mapper_utils_1.num)(data.index) ?? 0;
                if (block.type === 'tool_use') {
                    const ordinal = this.tools.size;
                    this.tools.set(index, ordinal);
                    return [{ type: 'tool_call_start', index: ordinal, callId: (0, mapper_utils_1.str)(block.id) ?? `toolu_${ordinal}`, name: (0, mapper_utils_1.str)(block.name) ?? '' }];
                }
                const text = block.type === 'text' ? (0, mapper_utils_1.str)(block.text) : undefined;
                return text ? [{ type: 'text_delta', text }] : [];
            }
            case 'content_block_delta': {
                const delta = (0, mapper_utils_1.rec)(data.delta);
                const index = (0, mapper_utils_1.num)(data.index) ?? 0;
                if (delta.type === 'text_delta') {
                    const text = (0, mapper_utils_1.str)(delta.text);
                    return text ? [{ type: 'text_delta', text }] : [];
                }
                if (delta.type === 'thinking_delta') {
                    const text = (0, mapper_utils_1.str)(delta.thinking);
                    return text ? [{ type: 'reasoning_delta', text }] : [];
                }
                if (delta.type === 'input_json_delta') {
                    const ordinal = this.tools.get(index);
                    const json = (0, mapper_utils_1.str)(delta.partial_json);
                    return ordinal !== undefined && json ? [{ type: 'tool_call_delta', index: ordinal, argumentsDelta: json }] : [];
                }
                return []; // signature_delta, citations_delta
            }
            case 'message_delta': {
                const delta = (0, mapper_utils_1.rec)(data.delta);
                if (delta.stop_reason !== undefined && delta.stop_reason !== null)
                    this.pendingFinish = (0, response_mapper_1.anthropicFinishReason)(delta.stop_reason);
                this.takeUsage(data.usage);
                return [];
            }
            case 'message_stop':
                return this.flush();
            case 'error':
                return [{ type: 'error', message: (0, response_mapper_1.extractAnthropicError)(data).message ?? 'Anthropic stream error', raw: event.data }];
            default:
                return []; // ping, content_block_stop, future event types
        }
    }
    end() {
        return this.flush();
    }
    takeUsage(u) {
        const usage = (0, mapper_utils_1.rec)(u);
        for (const field of USAGE_FIELDS) {
            const value = (0, mapper_utils_1.num)(usage[field]);
            if (value !== undefined)
                this.usage[field] = value;
        }
    }
    flush() {
        if (this.finished)
            return [];
        this.finished = true;
        if (!this.pendingFinish)
            return [{ type: 'error', message: 'Anthropic stream ended without a stop_reason' }];
        return [
            { type: 'usage', usage: (0, response_mapper_1.anthropicUsage)(this.usage) },
            { type: 'finish', finishReason: this.pendingFinish, ...(this.modelVersion !== undefined && { modelVersion: this.modelVersion }) },
        ];
    }
}
exports.AnthropicStreamParser = AnthropicStreamParser;
function createAnthropicStreamParser() {
    return new AnthropicStreamParser();
}
