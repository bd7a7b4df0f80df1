"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.SUPPORTS_COVERS = void 0;
exports.expandSupports = expandSupports;
/**
 * The catalog's `supports` vocabulary (decisions.md section 1). A catalog names parameters by their public
 * names; some names cover finer ones that providers accept only together with them. A catalog written with
 * the contract's names must work unchanged, so each covering name brings in what it covers; the finer names
 * stay accepted as aliases (listing them as well changes nothing).
 */
exports.SUPPORTS_COVERS = {
    // `top_logprobs` is only accepted together with `logprobs`.
    logprobs: ['top_logprobs'],
    // `tool_choice` and `parallel_tool_calls` only mean something with tools.
    tools: ['tool_choice', 'parallel_tool_calls'],
};
/** An endpoint's `supports` list with every covered name added, in the catalog's order, without duplicates. */
function expandSupports(supports) {
    const out = new Set();
    for (const name of supports) {
        out.add(name);
        for (const covered of exports.SUPPORTS_COVERS[name] ?? [])
            out.add(covered);
    }
    return [...out];
}
