/**
 * Stored input items in the public shape of GET /v1/responses/{id}/input_items
 * (https://platform.openai.com/docs/api-reference/responses/input-items): OpenAI's list object.
 */
import type { InputContentPart, InputItem } from '../providers/provider.types';

export type PublicInputItem = Record<string, unknown> & { id: string; type: string };

export interface InputItemList {
  object: 'list';
  data: PublicInputItem[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

function publicPart(part: InputContentPart): Record<string, unknown> {
  switch (part.type) {
    case 'input_text':
      return { type: 'input_text', text: part.text };
    case 'input_image':
      return { type: 'input_image', image_url: part.image_url, detail: part.detail ?? 'auto', file_id: null };
    case 'input_file':
      return { type: 'input_file', file_data: part.file_data ?? null, file_url: part.file_url ?? null, filename: part.filename ?? null, file_id: null };
    case 'output_text':
      return { type: 'output_text', text: part.text, annotations: [] };
  }
}

export function publicInputItem(id: string, item: InputItem): PublicInputItem {
  switch (item.type) {
    case 'message':
      return { id, type: 'message', role: item.role, status: 'completed', content: item.content.map(publicPart) };
    case 'function_call':
      return { id, type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments, status: 'completed' };
    case 'function_call_output':
      return { id, type: 'function_call_output', call_id: item.call_id, output: item.output, status: 'completed' };
    case 'reasoning':
      return { id, type: 'reasoning', summary: item.summary, ...(item.encrypted_content !== undefined && { encrypted_content: item.encrypted_content }) };
  }
}

/**
 * One page: items in `order` (`desc`: newest first, OpenAI's default), those after the item `after` (an id from a
 * previous page; an unknown id gives an empty page), at most `limit`.
 */
export function inputItemPage(items: ReadonlyArray<{ id: string; item: InputItem }>, q: { order: 'asc' | 'desc'; after?: string; limit: number }): InputItemList {
  const ordered = q.order === 'desc' ? [...items].reverse() : [...items];
  const start = q.after === undefined ? 0 : ordered.findIndex((i) => i.id === q.after) + 1;
  const rest = q.after !== undefined && start === 0 ? [] : ordered.slice(start);
  const data = rest.slice(0, q.limit).map((i) => publicInputItem(i.id, i.item));
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rest.length > q.limit };
}
