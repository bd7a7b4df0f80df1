import type { FinishReason, OutputItem, TextResult, TextStreamEvent, TokenizerFamily, TokenUsage } from '../../shared/providers/provider.types';
import { tokenWeight } from '../../shared/billing/pricing';

/** Builds the final TextResult out of a stream's canonical events (what the client saw, exactly). */
export class StreamAccumulator {
  /** Content reached the stream (text, reasoning, a tool call), first at `firstTokenAt`. */
  produced = false;
  firstTokenAt?: number;
  /** The provider's usage, when it reported it (before its `finish`). */
  reported?: TokenUsage;
  /**
   * The output so far in tokens of the provider's family, counted delta by delta (shared/billing/token-count.ts),
   * unrounded: the runaway-stream guard's measure, and a cut stream's output.
   */
  outputTokens = 0;
  private text = '';
  /** Reasoning items in order: their summary text, their encrypted reasoning, whether a delta still extends them. */
  private readonly reasoning: Array<{ text: string; encrypted?: string; open: boolean }> = [];
  private readonly calls: Array<{ callId: string; name: string; args: string }> = [];
  private finishReason?: FinishReason;
  private modelVersion?: string;
  private serviceTier?: string;

  constructor(readonly family: TokenizerFamily) {}

  push(ev: TextStreamEvent): void {
    // Content: text, reasoning, a tool call (a reasoning item's end only with its encrypted reasoning).
    if (ev.type === 'text_delta' || ev.type === 'reasoning_delta' || ev.type === 'tool_call_start' || (ev.type === 'reasoning_end' && ev.encryptedContent !== undefined)) {
      this.produced = true;
      this.firstTokenAt ??= Date.now();
    }
    switch (ev.type) {
      case 'text_delta':
        this.text += ev.text;
        this.outputTokens += tokenWeight(ev.text, this.family);
        break;
      case 'reasoning_delta': {
        if (ev.text === '') break;
        const last = this.reasoning.at(-1);
        if (last?.open) last.text += ev.text;
        else this.reasoning.push({ text: ev.text, open: true });
        this.outputTokens += tokenWeight(ev.text, this.family);
        break;
      }
      case 'reasoning_end': {
        const last = this.reasoning.at(-1);
        if (last?.open) {
          last.open = false;
          last.encrypted = ev.encryptedContent;
        } else if (ev.encryptedContent !== undefined) this.reasoning.push({ text: '', encrypted: ev.encryptedContent, open: false });
        break;
      }
      case 'tool_call_start':
        this.calls[ev.index] = { callId: ev.callId, name: ev.name, args: '' };
        this.outputTokens += tokenWeight(ev.name, this.family);
        break;
      case 'tool_call_delta':
        if (this.calls[ev.index]) this.calls[ev.index].args += ev.argumentsDelta;
        this.outputTokens += tokenWeight(ev.argumentsDelta, this.family);
        break;
      case 'usage':
        this.reported = ev.usage;
        break;
      case 'finish':
        this.finishReason = ev.finishReason;
        this.modelVersion = ev.modelVersion ?? this.modelVersion;
        this.serviceTier = ev.serviceTier ?? this.serviceTier;
        break;
      default:
        break;
    }
  }

  /** The result so far, with the usage it is charged for (`producedUsage`). */
  result(usage: TokenUsage): TextResult {
    const output: OutputItem[] = [];
    this.reasoning.forEach((r, i) =>
      output.push({ type: 'reasoning', id: `rs_${i}`, summary: r.text ? [{ type: 'summary_text', text: r.text }] : [], ...(r.encrypted !== undefined && { encrypted_content: r.encrypted }) }),
    );
    if (this.text || this.calls.length === 0) output.push({ type: 'message', id: 'msg_0', role: 'assistant', content: [{ type: 'output_text', text: this.text }] });
    this.calls.filter(Boolean).forEach((c, i) => output.push({ type: 'function_call', id: `fc_${i}`, call_id: c.callId, name: c.name, arguments: c.args }));
    return {
      output,
      finishReason: this.finishReason ?? (this.calls.length ? 'tool_calls' : 'error'),
      usage,
      modelVersion: this.modelVersion,
      ...(this.serviceTier !== undefined && { serviceTier: this.serviceTier }),
    };
  }
}
