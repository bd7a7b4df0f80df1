/**
 * The lines of a batch input as its driver and its validation read them (shared/services/batch-files.service.ts
 * readLines): numbers, byte offsets and sizes across chunk boundaries, and a long line's cost linear in its size
 * (issue 38 item 5: a 95 MB line held a process at 130 % CPU for minutes, its bytes copied again at every chunk).
 */
import { Readable } from 'node:stream';
import { readLines, type FileLine } from '../../../shared/services/jsonl';

/** `text` as a stream of `size`-byte chunks. */
const chunked = (text: string | Buffer, size: number) => {
  const b = Buffer.from(text);
  return Readable.from(Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size)));
};

async function all(body: NodeJS.ReadableStream, start?: number, first?: number): Promise<FileLine[]> {
  const out: FileLine[] = [];
  for await (const l of readLines(body, start, first)) out.push(l);
  return out;
}

it('numbers the lines, gives each its size in bytes (its end of line aside) and the offset after it, whatever the chunks', async () => {
  const text = 'ab\r\n\nçé\nlast';
  for (const size of [1, 2, 3, 64]) {
    expect(await all(chunked(text, size))).toEqual([
      { number: 1, text: 'ab', bytes: 2, end: 4 },
      { number: 2, text: '', bytes: 0, end: 5 },
      { number: 3, text: 'çé', bytes: 4, end: 10 },
      { number: 4, text: 'last', bytes: 4, end: 14 },
    ]);
  }
  // From a stored offset: the numbering and the offsets go on from there.
  expect(await all(chunked('x\ny\n', 1), 100, 7)).toEqual([
    { number: 7, text: 'x', bytes: 1, end: 102 },
    { number: 8, text: 'y', bytes: 1, end: 104 },
  ]);
});

it('copies a line that spans many chunks once: the bytes joined stay linear in its size', async () => {
  const line = `{"custom_id":"big","body":"${'x'.repeat(4 * 1024 * 1024)}"}`;
  const concat = jest.spyOn(Buffer, 'concat');
  try {
    const lines = await all(chunked(`${line}\n{"custom_id":"small"}\n`, 1024));
    expect(lines.map((l) => l.bytes)).toEqual([line.length, 21]);
    expect(lines[0]!.text).toBe(line);
    const copied = concat.mock.calls.reduce((n, [parts]) => n + (parts as Buffer[]).reduce((m, p) => m + p.length, 0), 0);
    // Joined once (the line's ~4,100 chunks held until its end): each byte copied once, where every chunk's join copied
    // the whole line so far again (~8.6 GB for these 4 MB).
    expect(copied).toBeLessThanOrEqual(line.length);
  } finally {
    concat.mockRestore();
  }
});
