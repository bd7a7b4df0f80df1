import type { Db } from '../../shared/db/client';
import type { Batch } from '../../shared/db/generated/client';
import { AppError } from '../../shared/errors/app-error';
import type { BatchFiles } from '../../shared/services/batch-files.service';
import { readLines } from '../../shared/services/jsonl';

/**
 * A line of a batch's input: its number, the byte offset it starts at, its custom_id and its body; the body is null for
 * a line longer than a request body may be (MAX_BODY_BYTES, the route's 413), which is never ordered.
 */
export interface InputLine {
  line: number;
  offset: number;
  customId: string;
  bytes: number;
  body: Record<string, unknown> | null;
}

/** The 413 a line longer than a request body answers, as its call would (measured in the line's bytes, as the route measures a body). */
export function lineTooLarge(bytes: number, maxBytes: number): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `This line is ${bytes} bytes: a request body holds at most ${maxBytes} bytes`);
}

/**
 * A batch's input as its driver reads it (docs/batches.md "How a batch runs"): the lines from the stored byte offset,
 * only those a step takes (memory and work are flat in the file's size), and one line again by its offset.
 */
export class BatchInput {
  constructor(private readonly d: { db: Db; files: BatchFiles; maxLineBytes: number }) {}

  /** Up to `max` lines from the driver's place in the input (blank lines skipped), and the place after them. */
  async readFrom(b: Pick<Batch, 'inputFileId' | 'nextLine' | 'nextOffset'>, max: number): Promise<{ lines: InputLine[]; next: { line: number; offset: number } }> {
    const file = await this.d.db.batchFile.findUnique({ where: { id: b.inputFileId } });
    const next = { line: b.nextLine, offset: Number(b.nextOffset) };
    const lines: InputLine[] = [];
    if (!file) return { lines, next };
    const stream = await this.d.files.from(file, next.offset);
    try {
      for await (const l of readLines(stream, next.offset, next.line)) {
        const start = next.offset;
        next.line = l.number + 1;
        next.offset = l.end;
        if (!l.text.trim()) continue;
        const parsed = JSON.parse(l.text) as { custom_id: string; body: Record<string, unknown> };
        lines.push({ line: l.number, offset: start, customId: parsed.custom_id, bytes: l.bytes, body: l.bytes > this.d.maxLineBytes ? null : parsed.body });
        if (lines.length >= max) break;
      }
    } finally {
      (stream as unknown as { destroy?: () => void }).destroy?.();
    }
    return { lines, next };
  }

  /** The line that starts at `offset` of the input (a taken line ordered again after a crash, or retried). */
  async lineAt(b: Pick<Batch, 'id' | 'inputFileId'>, offset: number): Promise<Pick<InputLine, 'bytes' | 'body'>> {
    const file = await this.d.db.batchFile.findUnique({ where: { id: b.inputFileId } });
    if (!file) throw new AppError('NOT_FOUND', `Input file ${b.inputFileId} is gone`);
    const stream = await this.d.files.from(file, offset);
    try {
      for await (const l of readLines(stream, offset)) {
        return { bytes: l.bytes, body: l.bytes > this.d.maxLineBytes ? null : (JSON.parse(l.text) as { body: Record<string, unknown> }).body };
      }
    } finally {
      (stream as unknown as { destroy?: () => void }).destroy?.();
    }
    throw new Error(`batch ${b.id}: no line at offset ${offset}`);
  }
}
