import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { assertBlobKey, type BlobObject, type BlobStore, type ByteRange } from './blob-store';

/**
 * Files under one root folder (`<homeDir>/files` by default). Writes go to a temporary file in the same folder
 * and are renamed into place, so a reader never sees a partial file and a crash leaves only `.tmp-*` litter.
 */
export class LocalBlobStore implements BlobStore {
  private ready?: Promise<void>;

  constructor(readonly root: string) {}

  private pathOf(key: string): string {
    assertBlobKey(key);
    return path.join(this.root, key);
  }

  private ensureRoot(): Promise<void> {
    this.ready ??= fsp.mkdir(this.root, { recursive: true }).then(() => undefined);
    return this.ready;
  }

  async put(key: string, body: Buffer | NodeJS.ReadableStream, _contentType: string): Promise<{ size: number }> {
    const target = this.pathOf(key);
    await this.ensureRoot();
    const tmp = path.join(this.root, `.tmp-${key}-${randomBytes(6).toString('hex')}`);
    try {
      if (Buffer.isBuffer(body)) await fsp.writeFile(tmp, body, { flag: 'wx' });
      else await pipeline(body as Readable, fs.createWriteStream(tmp, { flags: 'wx' }));
      const { size } = await fsp.stat(tmp);
      await fsp.rename(tmp, target);
      return { size };
    } catch (e) {
      await fsp.rm(tmp, { force: true });
      throw e;
    }
  }

  async get(key: string, range?: ByteRange): Promise<BlobObject | null> {
    const file = this.pathOf(key);
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(file, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    // Reading through the open handle: a concurrent delete cannot turn a found file into a failed stream.
    const { size } = await handle.stat();
    const body = handle.createReadStream(range ? { start: range.start, end: range.end ?? Math.max(size - 1, range.start) } : {});
    return { body, size };
  }

  async delete(key: string): Promise<void> {
    await fsp.rm(this.pathOf(key), { force: true });
  }
}
