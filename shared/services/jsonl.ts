import { Transform, type TransformCallback } from 'node:stream';
import { AppError } from '../errors/app-error';

/** JSONL as batch files hold it (docs/batches.md): an upload's lines counted as it streams, a file's lines read one at a time. */

/**
 * Counts the bytes and the non-blank lines of an upload as it streams through, and stops it past the limits
 * (a 413 past the bytes, a 400 past the lines): the file never sits in memory.
 */
export class LineCounter extends Transform {
  bytes = 0;
  lines = 0;
  private filled = false;

  constructor(
    private readonly maxLines: number,
    private readonly maxBytes: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) return done(new AppError('PAYLOAD_TOO_LARGE', `A batch input file holds at most ${this.maxBytes} bytes`));
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (c === 0x0a) {
        if (this.filled) this.lines++;
        this.filled = false;
      } else if (c !== 0x20 && c !== 0x09 && c !== 0x0d) this.filled = true;
    }
    if (this.lines > this.maxLines) return done(tooManyLines(this.maxLines));
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    if (this.filled) this.lines++;
    this.filled = false;
    done(this.lines > this.maxLines ? tooManyLines(this.maxLines) : null);
  }
}

const tooManyLines = (max: number) => AppError.validation([{ path: '/file', message: `holds more than ${max} lines` }], `A batch input file holds at most ${max} lines`);

/** One line of a JSONL object, its physical number (1-based), its size in bytes (its end of line aside) and the byte offset just after it. */
export interface FileLine {
  number: number;
  text: string;
  bytes: number;
  end: number;
}

/** A line's bytes (its `\n` excluded) as a FileLine: a `\r` before the `\n` is not the line's. */
function fileLine(b: Buffer, number: number, end: number): FileLine {
  const bytes = b.length > 0 && b[b.length - 1] === 0x0d ? b.length - 1 : b.length;
  return { number, text: b.toString('utf8', 0, bytes), bytes, end };
}

/**
 * The lines of a stream from byte `start` (a line's beginning), numbered from `firstNumber`, one at a time: memory
 * holds one chunk and one line, whatever the file's size. A line longer than a chunk is kept as the chunks that hold
 * it and joined once, when its end arrives: each byte is copied once however long the line (joining at every chunk
 * copied a 95 MB line ~1,500 times: minutes of CPU).
 */
export async function* readLines(body: NodeJS.ReadableStream, start = 0, firstNumber = 1): AsyncGenerator<FileLine> {
  let parts: Buffer[] = [];
  let offset = start;
  let number = firstNumber;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    let from = 0;
    for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, from)) {
      const line = parts.length ? Buffer.concat([...parts, chunk.subarray(from, nl)]) : chunk.subarray(from, nl);
      parts = [];
      offset += line.length + 1;
      yield fileLine(line, number++, offset);
      from = nl + 1;
    }
    if (from < chunk.length) parts.push(chunk.subarray(from));
  }
  if (parts.length) {
    const line = Buffer.concat(parts);
    yield fileLine(line, number, offset + line.length);
  }
}
