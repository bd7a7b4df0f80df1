import type { TextResult } from '../providers/provider.types';

/**
 * A result without the conversation's text, for `store: false` responses: what billing and history need (usage,
 * finish reason, the shape of the output) stays; message text, call arguments, reasoning (its summary and its encrypted content) and log-probabilities go.
 */
export function withoutText(result: TextResult): TextResult {
  const { logprobs: _dropped, ...rest } = result;
  return {
    ...rest,
    output: result.output.map((o) => {
      if (o.type === 'message') return { ...o, content: o.content.map((c) => ({ ...c, text: '' })) };
      if (o.type === 'function_call') return { ...o, arguments: '' };
      const { encrypted_content: _reasoning, ...item } = o;
      return { ...item, summary: [] };
    }),
  };
}
