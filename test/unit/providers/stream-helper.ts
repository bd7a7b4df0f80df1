import type { TextStreamParser } from '../../../shared/providers/adapter.types';
import type { TextStreamEvent } from '../../../shared/providers/provider.types';
import { SseParser } from '../../../shared/providers/api';

/** Feeds an SSE transcript through the SSE parser in small byte chunks, then through a stream mapper. */
export function runStream(parser: TextStreamParser, transcript: string, chunkBytes = 7): TextStreamEvent[] {
  const bytes = Buffer.from(transcript, 'utf8');
  const sse = new SseParser();
  const out: TextStreamEvent[] = [];
  for (let i = 0; i < bytes.length; i += chunkBytes) {
    for (const event of sse.push(bytes.subarray(i, i + chunkBytes))) out.push(...parser.push(event));
  }
  for (const event of sse.end()) out.push(...parser.push(event));
  out.push(...parser.end());
  return out;
}

/** `data: <json>\n\n` lines, optionally with an `event:` name (Anthropic). */
export function sse(events: Array<unknown | [string, unknown]>): string {
  return events
    .map((e) => (Array.isArray(e) && typeof e[0] === 'string' && e.length === 2 ? `event: ${e[0]}\ndata: ${JSON.stringify(e[1])}\n\n` : `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`))
    .join('');
}
