import type { FinishReason, OutputItem, TextResult, TextStreamEvent, TokenUsage } from '../../shared/providers/provider.types';

/** Builds the final TextResult out of a stream's canonical events (what the client saw, exactly). */
export class StreamAccumulator {
  produced = false;
  firstTokenAt?: number;
  private text = '';
  /** Reasoning items in order: their summary text, their encrypted reasoning, whether a delta still extends them. */
  private readonly reasoning: Array<{ text: string; encrypted?: string; open: boolean }> = [];
  private readonly calls: Array<{ callId: string; name: string; args: string }> = [];
  private usage?: TokenUsage;
  private finishReason?: FinishReason;
  private modelVersion?: string;
  private serviceTier?: string;

  push(ev: TextStreamEvent): void {
    switch (ev.type) {
      case 'text_delta':
        this.mark();
        this.text += ev.text;
        break;
      case 'reasoning_delta': {
        this.mark();
        if (ev.text === '') break;
        const last = this.reasoning.at(-1);
        if (last?.open) last.text += ev.text;
        else this.reasoning.push({ text: ev.text, open: true });
        break;
      }
      case 'reasoning_end': {
        const last = this.reasoning.at(-1);
        if (last?.open) {
          last.open = false;
          last.encrypted = ev.encryptedContent;
        } else if (ev.encryptedContent !== undefined) this.reasoning.push({ text: '', encrypted: ev.encryptedContent, open: false });
        if (ev.encryptedContent !== undefined) this.mark();
        break;
      }
      case 'tool_call_start':
        this.mark();
        this.calls[ev.index] = { callId: ev.callId, name: ev.name, args: '' };
        break;
      case 'tool_call_delta':
        if (this.calls[ev.index]) this.calls[ev.index].args += ev.argumentsDelta;
        break;
      case 'usage':
        this.usage = ev.usage;
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

  /** Output so far in estimated tokens (about 4 characters a token), for the runaway-stream guard. */
  outputTokens(): number {
    return Math.ceil(this.outputChars() / 4);
  }

  private outputChars(): number {
    return this.text.length + this.reasoning.reduce((n, r) => n + r.text.length, 0) + this.calls.reduce((n, c) => n + (c?.args.length ?? 0), 0);
  }

  private mark(): void {
    this.produced = true;
    this.firstTokenAt ??= Date.now();
  }

  /** The result so far; without the provider's usage, tokens are estimated (about 4 characters a token). */
  result(inputEstimate: number): TextResult {
    const output: OutputItem[] = [];
    this.reasoning.forEach((r, i) =>
      output.push({ type: 'reasoning', id: `rs_${i}`, summary: r.text ? [{ type: 'summary_text', text: r.text }] : [], ...(r.encrypted !== undefined && { encrypted_content: r.encrypted }) }),
    );
    if (this.text || this.calls.length === 0) output.push({ type: 'message', id: 'msg_0', role: 'assistant', content: [{ type: 'output_text', text: this.text }] });
    this.calls.filter(Boolean).forEach((c, i) => output.push({ type: 'function_call', id: `fc_${i}`, call_id: c.callId, name: c.name, arguments: c.args }));
    const outputChars = this.outputChars();
    return {
      output,
      finishReason: this.finishReason ?? (this.calls.length ? 'tool_calls' : 'error'),
      usage: this.usage ?? { inputTokens: inputEstimate, outputTokens: Math.ceil(outputChars / 4) },
      modelVersion: this.modelVersion,
      ...(this.serviceTier !== undefined && { serviceTier: this.serviceTier }),
    };
  }
}
