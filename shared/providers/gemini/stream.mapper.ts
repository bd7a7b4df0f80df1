/**
 * Gemini `:streamGenerateContent?alt=sse` → canonical events. Every `data:` is a whole GenerateContentResponse
 * holding the next parts; `usageMetadata` is cumulative and the chunk with `finishReason` is the last one.
 * https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 */
import type { SseEvent, TextStreamParser } from '../adapter.types';
import type { TextStreamEvent, TokenUsage } from '../provider.types';
import { arr, isRecord, parseStreamJson, rec, str } from '../mapper-utils';
import { extractGeminiError, geminiCallId, geminiFinishReason, geminiUsage } from './response.mapper';

export class GeminiStreamParser implements TextStreamParser {
  private usage: TokenUsage | undefined;
  /** The last usageMetadata counted the output (its `candidatesTokenCount`), not only the prompt. */
  private outputCounted = false;
  private modelVersion: string | undefined;
  private calls = 0;
  private finished = false;

  push(event: SseEvent): TextStreamEvent[] {
    const parsed = parseStreamJson(event.data);
    if (!parsed.ok) return [parsed.event];
    const chunk = parsed.value;
    if (chunk.error !== undefined) return [{ type: 'error', message: extractGeminiError(chunk).message ?? 'Gemini stream error', raw: event.data }];
    const out: TextStreamEvent[] = [];
    const model = str(chunk.modelVersion);
    if (model) this.modelVersion = model;
    if (isRecord(chunk.usageMetadata)) {
      this.usage = geminiUsage(chunk.usageMetadata);
      this.outputCounted = chunk.usageMetadata.candidatesTokenCount !== undefined;
    }
    const responseId = str(chunk.responseId) ?? 'gemini';

    const candidate = arr(chunk.candidates)[0];
    if (!isRecord(candidate)) {
      // A blocked prompt: promptFeedback and no candidates.
      if (isRecord(chunk.promptFeedback) && chunk.promptFeedback.blockReason !== undefined) out.push(...this.finish('content_filter'));
      return out;
    }
    for (const part of arr(rec(candidate.content).parts)) {
      if (!isRecord(part)) continue;
      if (isRecord(part.functionCall)) {
        const fc = part.functionCall;
        const index = this.calls++;
        out.push({ type: 'tool_call_start', index, callId: geminiCallId(fc, responseId, index), name: str(fc.name) ?? '' });
        out.push({ type: 'tool_call_delta', index, argumentsDelta: JSON.stringify(fc.args ?? {}) });
      } else if (typeof part.text === 'string' && part.text !== '') {
        out.push(part.thought === true ? { type: 'reasoning_delta', text: part.text } : { type: 'text_delta', text: part.text });
      }
    }
    if (typeof candidate.finishReason === 'string') out.push(...this.finish(geminiFinishReason(candidate.finishReason, this.calls > 0)));
    return out;
  }

  /** usageMetadata is cumulative on every chunk: the prompt, and the output when the chunk counted it. */
  usageSoFar(): Partial<TokenUsage> | undefined {
    if (!this.usage) return undefined;
    const { outputTokens, reasoningTokens, ...input } = this.usage;
    return this.outputCounted ? this.usage : input;
  }

  end(): TextStreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    return [{ type: 'error', message: 'Gemini stream ended without a finishReason' }];
  }

  private finish(reason: ReturnType<typeof geminiFinishReason>): TextStreamEvent[] {
    if (this.finished) return [];
    this.finished = true;
    const out: TextStreamEvent[] = [];
    if (this.usage) out.push({ type: 'usage', usage: this.usage });
    out.push({ type: 'finish', finishReason: reason, ...(this.modelVersion !== undefined && { modelVersion: this.modelVersion }) });
    return out;
  }
}

export function createGeminiStreamParser(): TextStreamParser {
  return new GeminiStreamParser();
}
