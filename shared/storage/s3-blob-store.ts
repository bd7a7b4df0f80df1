import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import { assertBlobKey, readAll, type BlobObject, type BlobStore, type ByteRange } from './blob-store';

export interface S3BlobStoreOptions {
  bucket: string;
  region: string;
  /** S3-compatible services (MinIO, R2, Ceph...): their URL. Absent: AWS S3. */
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle?: boolean;
  /** Folder inside the bucket, e.g. `switchyard/`; empty by default. */
  prefix?: string;
  /** Test seam: a client of the caller's making. */
  client?: S3Client;
}

/** `total` from `Content-Range: bytes 0-99/1234`. */
function totalFromContentRange(v: string | undefined): number | undefined {
  const m = /\/(\d+)$/.exec(v ?? '');
  return m ? Number(m[1]) : undefined;
}

function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === 'NoSuchKey' || err?.name === 'NotFound' || err?.$metadata?.httpStatusCode === 404;
}

/** S3 or any S3-compatible storage through the official AWS SDK v3. */
export class S3BlobStore implements BlobStore {
  readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(opts: S3BlobStoreOptions) {
    this.bucket = opts.bucket;
    this.prefix = opts.prefix ?? '';
    const config: S3ClientConfig = {
      region: opts.region,
      endpoint: opts.endpoint,
      forcePathStyle: opts.forcePathStyle,
      // Checksums only where S3 demands them: many S3-compatible stores reject the newer default trailers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    };
    if (opts.accessKeyId && opts.secretAccessKey) config.credentials = { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey };
    this.client = opts.client ?? new S3Client(config);
  }

  private objectKey(key: string): string {
    assertBlobKey(key);
    return `${this.prefix}${key}`;
  }

  async put(key: string, body: Buffer | NodeJS.ReadableStream, contentType: string, size?: number): Promise<{ size: number }> {
    // A single PUT needs a known length; a stream without one is read into memory (callers bound upload sizes).
    const payload = Buffer.isBuffer(body) || size === undefined ? (Buffer.isBuffer(body) ? body : await readAll(body)) : (body as Readable);
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.objectKey(key),
        Body: payload,
        ContentType: contentType,
        ContentLength: Buffer.isBuffer(payload) ? payload.length : size,
      }),
    );
    return { size: Buffer.isBuffer(payload) ? payload.length : size! };
  }

  async get(key: string, range?: ByteRange): Promise<BlobObject | null> {
    try {
      const out = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.objectKey(key),
          Range: range ? `bytes=${range.start}-${range.end ?? ''}` : undefined,
        }),
      );
      const size = totalFromContentRange(out.ContentRange) ?? out.ContentLength ?? 0;
      return { body: out.Body as Readable, size, contentType: out.ContentType };
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    // S3 answers 204 for a missing key too, so a repeated delete is harmless.
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
  }
}
