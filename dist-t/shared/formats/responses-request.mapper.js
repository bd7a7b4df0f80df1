"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.LOGPROBS_INCLUDE = void 0;
exports.responsesToCanonical = responsesToCanonical;
exports.itemReferenceIds = itemReferenceIds;
/**
 * POST /v1/responses body → canonical `TextRequest` (without the upstream model name, which routing decides).
 * https://platform.openai.com/docs/api-reference/responses/create
 */
const app_error_1 = require("../errors/app-error");
const format_utils_1 = require("./format-utils");
/** The include value that asks for output log-probabilities in the Responses API. */
exports.LOGPROBS_INCLUDE = 'message.output_text.logprobs';
/**
 * @param history the stored conversation of `previous_response_id` (its input and output items), put before
 *   this request's input. Instructions are not carried over, as in OpenAI's API.
 * @param references what each `item_reference` stands for, in place of the reference.
 * @throws AppError 400 when there is no input at all (no `input` and no history), or a reference is unknown.
 */
function responsesToCanonical(body, history = [], references = new Map()) {
    const warnings = [];
    const input = [...history, ...toInputItems(body.input, warnings, references)];
    if (input.length === 0)
        throw app_error_1.AppError.validation([{ path: '/input', message: 'must not be empty' }]);
    const req = { input, stream: body.stream === true, requestedParameters: [], warnings };
    if (body.instructions != null && body.instructions !== '')
        req.instructions = body.instructions;
    const tools = toFunctionTools(body.tools ?? [], warnings);
    const choice = body.tool_choice === undefined ? undefined : toToolChoice(body.tool_choice, warnings);
    const allowed = choice?.allowed;
    const usable = allowed ? tools.filter((t) => allowed.has(t.name)) : tools;
    if (usable.length > 0)
        req.tools = usable;
    if (choice?.choice !== undefined)
        req.toolChoice = choice.choice;
    if (body.parallel_tool_calls != null)
        req.parallelToolCalls = body.parallel_tool_calls;
    if (body.max_output_tokens != null)
        req.maxOutputTokens = body.max_output_tokens;
    if (body.temperature != null)
        req.temperature = body.temperature;
    if (body.top_p != null)
        req.topP = body.top_p;
    if (body.top_k != null)
        req.topK = body.top_k;
    if (body.presence_penalty != null)
        req.presencePenalty = body.presence_penalty;
    if (body.frequency_penalty != null)
        req.frequencyPenalty = body.frequency_penalty;
    const reasoning = (0, format_utils_1.canonicalReasoning)(body.reasoning);
    if (reasoning)
        req.reasoning = reasoning;
    if (body.text?.format)
        req.textFormat = toTextFormat(body.text.format);
    // Responses asks for log-probabilities with `include`; `top_logprobs` alone implies them too.
    // Responses asks for log-probabilities with `include`; `top_logprobs` alone implies them too.
    return (0, format_utils_1.finishTextRequest)(req, body, (body.include ?? []).includes(exports.LOGPROBS_INCLUDE) || body.top_logprobs != null);
}
/** Every `item_reference` id of an input, in order, once each. */
function itemReferenceIds(input) {
    if (input === undefined || typeof input === 'string')
        return [];
    return [...new Set(input.flatMap((i) => (i.type === 'item_reference' ? [i.id] : [])))];
}
function toInputItems(input, warnings, references) {
    if (input === undefined)
        return [];
    if (typeof input === 'string')
        return [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
    const out = [];
    input.forEach((item, i) => {
        if (item.type === 'item_reference') {
            const found = references.get(item.id);
            if (!found)
                throw app_error_1.AppError.validation([{ path: `/input/${i}/id`, message: `no stored item '${item.id}'` }], `Item reference '${item.id}' not found`);
            out.push(...found);
            return;
        }
        const mapped = toInputItem(item, warnings);
        if (mapped)
            out.push(mapped);
    });
    return out;
}
function toInputItem(item, warnings) {
    switch (item.type) {
        case undefined:
        case 'message': {
            const content = typeof item.content === 'string'
                ? [item.role === 'assistant' ? { type: 'output_text', text: item.content } : { type: 'input_text', text: item.content }]
                : item.content.map(toContentPart);
            return { type: 'message', role: item.role, content };
        }
        case 'function_call':
            return { type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments };
        case 'function_call_output':
            return { type: 'function_call_output', call_id: item.call_id, output: outputText(item.output, warnings) };
        case 'reasoning':
            // Reasoning items come back when clients replay `response.output`; providers get no earlier reasoning.
            return undefined;
    }
}
function toContentPart(part) {
    switch (part.type) {
        case 'input_text':
            return { type: 'input_text', text: part.text };
        case 'input_image':
            return { type: 'input_image', image_url: part.image_url, ...(part.detail !== undefined && { detail: part.detail }) };
        case 'input_file':
            return {
                type: 'input_file',
                ...(part.file_data !== undefined && { file_data: part.file_data }),
                ...(part.file_url !== undefined && { file_url: part.file_url }),
                ...(part.filename !== undefined && { filename: part.filename }),
            };
        case 'output_text':
            return { type: 'output_text', text: part.text };
        case 'refusal':
            return { type: 'output_text', text: part.refusal };
    }
}
/** A tool's output as a string: text parts joined; other parts cannot reach a provider as a tool result. */
function outputText(output, warnings) {
    if (typeof output === 'string')
        return output;
    const texts = [];
    for (const part of output) {
        if (part.type === 'input_text' || part.type === 'output_text')
            texts.push(part.text);
        else
            warnings.push(`function_call_output part of type '${part.type}' is not supported and was ignored`);
    }
    return texts.join('');
}
function toFunctionTools(tools, warnings) {
    const out = [];
    for (const t of tools) {
        if (t.type !== 'function') {
            warnings.push(`tool type '${t.type}' is not supported and was ignored`);
            continue;
        }
        const f = t;
        const tool = { type: 'function', name: f.name };
        if (f.description != null)
            tool.description = f.description;
        if (f.parameters != null)
            tool.parameters = f.parameters;
        if (f.strict != null)
            tool.strict = f.strict;
        out.push(tool);
    }
    return out;
}
/** `allowed_tools` narrows the tools to the named functions and becomes its `mode`. */
function toToolChoice(choice, warnings) {
    if (typeof choice === 'string')
        return { choice: choice };
    if (choice.type === 'function')
        return { choice: { type: 'function', name: choice.name } };
    if (choice.type === 'allowed_tools') {
        const c = choice;
        const names = c.tools.filter((t) => t.type === 'function' && typeof t.name === 'string').map((t) => t.name);
        return { choice: c.mode, allowed: new Set(names) };
    }
    warnings.push(`tool_choice of type '${choice.type}' is not supported and was ignored`);
    return undefined;
}
function toTextFormat(format) {
    if (format.type !== 'json_schema')
        return { type: format.type };
    const out = { type: 'json_schema', name: format.name, schema: format.schema };
    if (format.strict != null)
        out.strict = format.strict;
    if (format.description !== undefined)
        out.description = format.description;
    return out;
}
