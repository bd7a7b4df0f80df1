/** A byte range of a stored object: `start` and `end` inclusive (as in HTTP `Range`); no `end` means to the last byte. */
export interface ByteRange {
  start: number;
  end?: number;
}

export interface BlobObject {
  body: NodeJS.ReadableStream;
  /** Size of the whole object in bytes, whatever range was asked. */
  size: number;
  contentType?: string;
}

/**
 * Where file bytes live (decisions.md section 5). Keys are generated ids, never caller input. Metadata
 * (MIME type, owner, policy) lives in PostgreSQL; a store only keeps bytes.
 */
export interface BlobStore {
  /** Writes the whole object; a reader never sees a half-written one. Answers the stored size. */
  put(key: string, body: Buffer | NodeJS.ReadableStream, contentType: string, size?: number): Promise<{ size: number }>;
  /** The object (or the asked range of it), or null when there is none. */
  get(key: string, range?: ByteRange): Promise<BlobObject | null>;
  /** Removes the object; removing a missing one is not an error. */
  delete(key: string): Promise<void>;
}

/** Keys are generated ids: letters, digits, `_` and `-` only, so no key can climb out of its folder or bucket prefix. */
export const BLOB_KEY_PATTERN = /^[A-Za-z0-9_-]{1,200}$/;

export function assertBlobKey(key: string): void {
  if (!BLOB_KEY_PATTERN.test(key)) throw new Error(`Invalid blob key ${JSON.stringify(key)}`);
}

/** Reads a stream to one buffer (bounded by whoever produced it). */
export async function readAll(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer | string>) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}
