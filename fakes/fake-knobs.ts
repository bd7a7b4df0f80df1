/** How a fake provider behaves (fake-provider.ts `setKnobs`, `/_fake/knobs`): delays, failures, batch timing. */
export interface FakeKnobs {
  /** Delay before the response headers (and so before the first stream chunk). */
  latencyMs?: number;
  /** A random extra delay, 0 to this many ms, on top of `latencyMs` (requests sent together then end apart). */
  latencyJitterMs?: number;
  /**
   * Generation requests whose body (as JSON) contains a marker wait this much longer: `{"[slow]": 30000}`. Neither the
   * batch APIs' requests (files, batches) nor the lines they run are delayed.
   */
  markerLatencyMs?: Record<string, number>;
  /** Force an HTTP error status (e.g. 500, 429, 400), body in the provider's error format. */
  status?: number;
  /** Apply the failure knobs (status, malformed, hang, resetConnection, failMidStream) to the first N requests only; alone it means status 500. */
  failTimes?: number;
  /** Reply 200 with broken JSON (or an extra broken SSE frame after the first delta in streams). */
  malformed?: boolean;
  /** Never answer (hold the socket open). */
  hang?: boolean;
  /** Destroy the socket without answering. */
  resetConnection?: boolean;
  /** Usage to report; defaults derive from input length (ceil(chars/4), min 1). Prompt includes cached. */
  promptTokens?: number;
  /** Output tokens including reasoning tokens. */
  completionTokens?: number;
  cachedTokens?: number;
  reasoningTokens?: number;
  /** The completion text (default "Echo: <last user text>"). */
  text?: string;
  /** Number of content deltas in a stream (default 4). */
  streamChunks?: number;
  /** Delay between stream chunks. */
  chunkDelayMs?: number;
  /**
   * A stream stops after this many deltas and goes on when the knobs are set again (or the client leaves; a stream
   * whose knobs were set again before it got there does not stop): a case
   * that must act while streams are mid-way (a store stopped, clients leaving) waits for the deltas, acts, then sets
   * the knobs, however slow the machine.
   */
  holdAfterChunks?: number;
  /**
   * Generation requests wait, after any latency, until the knobs are set again (or the client leaves): a case that must
   * act while calls are inside the provider ends them when it has acted, however slow the machine.
   */
  holdReplies?: boolean;
  /** Keep streaming deltas forever (until the client disconnects). */
  endlessStream?: boolean;
  /** Send about half of the deltas (half of the body when not streaming), then destroy the socket. */
  failMidStream?: boolean;
  /** Per output position, token -> logprob; the argmax tokens joined become the text (unless `text` is set). */
  logprobs?: Array<Record<string, number>>;
  /** Never return logprobs even if asked. */
  noLogprobs?: boolean;
  /** Embedding size when the request does not ask for one (default 8). */
  embeddingDims?: number;
  /** Answer with a function/tool call instead of text. */
  toolCall?: { name: string; arguments: string };
  /** Polls a Replicate prediction stays "processing" before it finishes (default 1). */
  replicateSteps?: number;
  /** The prediction ends "failed" with an error string. */
  replicateFail?: boolean;
  /** Reported duration of video/audio outputs (default: input `duration`, else 5). */
  mediaDurationSeconds?: number;
  /** Adds a `retry-after` header to injected error responses. */
  retryAfterSeconds?: number;
  /** Delay before a generated file (`/files/...`) is served: widens the window in which an output is being stored. */
  fileLatencyMs?: number;
  /** Replicate predictions report no output duration in `metrics` (the duration then comes from the request or the file). */
  replicateNoDuration?: boolean;
  /** A Replicate image, video or audio prediction also answers this text: its output is `{<kind>: file(s), text}`. */
  replicateText?: string;
  /** With `replicateText`: the text is the whole output, no file (a model that answers in words instead). */
  replicateTextOnly?: boolean;
  /**
   * How long an OpenAI or Anthropic batch takes to end, from its creation (default 200 ms): validating for the first
   * tenth, lines run evenly over the next eight tenths, finalizing for the last. A batch keeps the knobs of its creation.
   */
  batchMs?: number;
  /** The processing tier OpenAI's replies say served the call, whatever was asked (`default`: a priority call downgraded). */
  serviceTier?: string;
  /** Batch lines whose request (as JSON) contains a marker fail with its status, in the format's error body: `{"[fail-500]": 500}`. */
  batchLineErrors?: Record<string, number>;
  /** The whole batch fails: OpenAI's ends `failed` (`errors.data`, `token_limit_exceeded`) after validating; Anthropic refuses the create (400). */
  batchFail?: boolean;
  /** The batch expires once this many lines ran (0: none runs): OpenAI `expired` (the rest `batch_expired` in the error file), Anthropic `expired` results. */
  batchExpireAfterLines?: number;
}
