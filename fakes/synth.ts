/**
 * Deterministic "model output": completion text, token usage, log-probabilities, stream pieces,
 * embedding vectors and tiny media files. Provider-neutral; each wire format renders it.
 */
import type { FakeKnobs } from './fake-knobs';
import { groupEven, splitEven } from './common';

/** Rough token count used everywhere: ceil(chars / 4), at least 1. */
export const tokenCount = (chars: number): number => Math.max(1, Math.ceil(chars / 4));

export interface TokenLogprob {
  token: string;
  logprob: number;
  /** Best first; the chosen token is normally the first entry. */
  top: Array<[string, number]>;
}
export interface Piece {
  text: string;
  /** Positions covered by this piece (empty when log-probabilities are not returned). */
  lp: TokenLogprob[];
}
/** prompt includes cached; completion includes reasoning (OpenAI semantics; formats re-split as needed). */
export interface Usage {
  prompt: number;
  completion: number;
  cached: number;
  reasoning: number;
}
export type Finish = 'stop' | 'length' | 'stop_sequence' | 'tool';
export interface Completion {
  text: string;
  finish: Finish;
  stopSequence: string | null;
  /** Returned log-probabilities, or null when not requested / `noLogprobs`. */
  logprobs: TokenLogprob[] | null;
  pieces: Piece[];
  usage: Usage;
  toolCall: { name: string; arguments: string } | null;
}
export interface ComposeInput {
  /** Last user text, echoed by default. */
  userText: string;
  /** Characters of prompt text, for the default prompt token count. */
  inputChars: number;
  maxTokens?: number;
  stop?: string[];
  /** Whether the request asked for log-probabilities. */
  wantLogprobs?: boolean;
}

/**
 * The runners-up of every synthetic position: one-token answers first (yes/no, letters, digits: what a typed question
 * of /v1/systemone reads among the top log-probabilities), then common words.
 */
const ALTERNATIVES = ['Y', 'N', 'A', 'B', 'C', 'D', '1', '2', '3', '4', '5', ' the', ' a', ',', '.', ' and', ' of', ' to', ' in', ' is', ' it'];

function fromKnob(rec: Record<string, number>): TokenLogprob {
  const top = Object.entries(rec).sort((a, b) => b[1] - a[1]);
  const [token, logprob] = top[0] ?? ['', 0];
  return { token, logprob, top };
}

/** Synthetic positions for a text: word-ish tokens, each the clear favourite among fixed alternatives. */
function synthetic(text: string): TokenLogprob[] {
  return (text.match(/\s*\S+|\s+/g) ?? []).map((token, i) => {
    const logprob = -0.001 - (i % 7) * 0.013;
    const top: Array<[string, number]> = [[token, logprob]];
    for (let j = 0; j < ALTERNATIVES.length && top.length < 20; j++) if (ALTERNATIVES[j] !== token) top.push([ALTERNATIVES[j], -2.5 - j * 0.5]);
    return { token, logprob, top };
  });
}

/** Keeps the positions that fit entirely within the first `chars` characters. */
function fitPositions(positions: TokenLogprob[], chars: number): TokenLogprob[] {
  let used = 0;
  let i = 0;
  while (i < positions.length && used + positions[i].token.length <= chars) used += positions[i++].token.length;
  return positions.slice(0, i);
}

export function compose(knobs: FakeKnobs, input: ComposeInput): Completion {
  const n = knobs.streamChunks ?? 4;
  const usage = (visible: number): Usage => {
    const reasoning = knobs.reasoningTokens ?? 0;
    return { prompt: knobs.promptTokens ?? tokenCount(input.inputChars), completion: knobs.completionTokens ?? visible + reasoning, cached: knobs.cachedTokens ?? 0, reasoning };
  };
  if (knobs.toolCall) {
    const { name, arguments: args } = knobs.toolCall;
    return { text: '', finish: 'tool', stopSequence: null, logprobs: null, pieces: splitEven(args, n).map((text) => ({ text, lp: [] })), usage: usage(tokenCount(name.length + args.length)), toolCall: { name, arguments: args } };
  }
  const fromKnobs = knobs.logprobs?.length ? knobs.logprobs.map(fromKnob) : null;
  let text = knobs.text ?? (fromKnobs ? fromKnobs.map((p) => p.token).join('') : `Echo: ${input.userText}`);
  const wantLp = input.wantLogprobs === true && knobs.noLogprobs !== true;
  // Knob positions are cut with the text below; synthetic ones are made from the final text, so a reply cut to one
  // token (max_tokens 1) still has that token's log-probabilities.
  let positions = fromKnobs;
  let finish: Finish = 'stop';
  let stopSequence: string | null = null;

  for (const s of input.stop ?? []) {
    const at = text.indexOf(s);
    if (at >= 0) {
      // later matches are searched in the already-cut text, so the earliest stop wins
      text = text.slice(0, at);
      finish = 'stop_sequence';
      stopSequence = s;
    }
  }
  if (positions && stopSequence !== null) positions = fitPositions(positions, text.length);
  let visible = fromKnobs && positions ? positions.length : tokenCount(text.length);
  if (input.maxTokens !== undefined && input.maxTokens >= 0 && visible > input.maxTokens) {
    if (fromKnobs && positions) {
      positions = positions.slice(0, input.maxTokens);
      text = knobs.text === undefined ? positions.map((p) => p.token).join('') : text.slice(0, input.maxTokens * 4);
    } else {
      text = text.slice(0, input.maxTokens * 4);
    }
    visible = input.maxTokens;
    finish = 'length';
    stopSequence = null;
  }

  const logprobs = wantLp ? (positions ?? synthetic(text)) : null;
  let pieces: Piece[];
  if (logprobs && logprobs.length > 0) {
    const groups = groupEven(logprobs, n);
    const joined = logprobs.map((p) => p.token).join('');
    const texts = joined === text ? groups.map((g) => g.map((p) => p.token).join('')) : splitEven(text, groups.length);
    pieces = groups.map((lp, i) => ({ text: texts[i], lp }));
  } else {
    pieces = splitEven(text, n).map((t) => ({ text: t, lp: [] }));
  }
  return { text, finish, stopSequence, logprobs, pieces, usage: usage(visible), toolCall: null };
}

/** UTF-8 bytes of a token, as OpenAI reports them. */
export const utf8Bytes = (s: string): number[] => Array.from(Buffer.from(s, 'utf8'));

// ---------- embeddings ----------

/** A deterministic unit vector (float32-exact values) derived from the text. */
export function embed(text: string, dims: number): number[] {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  let s = h >>> 0 || 1;
  const v = new Array<number>(dims);
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    v[i] = ((s >>> 0) / 4294967296) * 2 - 1;
    norm += v[i] * v[i];
  }
  norm = Math.sqrt(norm) || 1;
  for (let i = 0; i < dims; i++) v[i] = Math.fround(v[i] / norm);
  return v;
}

/** Little-endian float32 bytes, base64-encoded (OpenAI `encoding_format: "base64"`). */
export function float32Base64(v: number[]): string {
  const buf = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i], i * 4);
  return buf.toString('base64');
}

// ---------- media ----------

/** A valid 1x1 transparent PNG. */
export const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const PNG = Buffer.from(PNG_BASE64, 'base64');

function box(type: string, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + payload.length, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, payload]);
}
/** The seconds the fake MP4's `mvhd` box states (what a duration read from the file finds). */
export const MP4_FILE_SECONDS = 5;
/** A movie header (`mvhd`, version 0): timescale 1000, duration MP4_FILE_SECONDS × 1000. */
function mvhd(): Buffer {
  const p = Buffer.alloc(100);
  p.writeUInt32BE(1000, 12);
  p.writeUInt32BE(MP4_FILE_SECONDS * 1000, 16);
  p.writeUInt32BE(0x00010000, 20); // rate 1.0
  p.writeUInt16BE(0x0100, 24); // volume 1.0
  p.writeUInt32BE(2, 96); // next track id
  return box('mvhd', p);
}
/** An MP4-looking blob: `ftyp` (isom), `free`, a small `mdat` box and a `moov` with its `mvhd`. */
const MP4 = Buffer.concat([
  box('ftyp', Buffer.concat([Buffer.from('isom', 'latin1'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2avc1mp41', 'latin1')])),
  box('free', Buffer.alloc(0)),
  box('mdat', Buffer.alloc(64)),
  box('moov', mvhd()),
]);
/** An MP3: ID3v2.4 header plus three silent MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz). */
const MP3 = (() => {
  const frame = Buffer.alloc(417);
  frame.set([0xff, 0xfb, 0x90, 0x64]);
  return Buffer.concat([Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0]), frame, frame, frame]);
})();
/** A WAV: 0.1 s of 16-bit mono 8 kHz silence. */
const WAV = (() => {
  const data = 1600;
  const b = Buffer.alloc(44 + data);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(36 + data, 4);
  b.write('WAVEfmt ', 8, 'latin1');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(16000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36, 'latin1');
  b.writeUInt32LE(data, 40);
  return b;
})();

/** Each generated file the fake serves at `/files/<name>.<ext>`, by extension. */
export const MEDIA: Record<string, { type: string; bytes: Buffer }> = {
  png: { type: 'image/png', bytes: PNG },
  mp4: { type: 'video/mp4', bytes: MP4 },
  mp3: { type: 'audio/mpeg', bytes: MP3 },
  wav: { type: 'audio/wav', bytes: WAV },
};
