import path from 'node:path';
import type { S3Settings } from '../config/env';
import type { BlobStore } from './blob-store';
import { LocalBlobStore } from './local-blob-store';
import { S3BlobStore } from './s3-blob-store';

/**
 * Local disk under `<homeDir>/files` (./.switchyard/files by default), or S3-compatible storage when
 * `S3_BUCKET` is set (decisions.md section 5; the S3_* variables are parsed in shared/config/env.ts). Without
 * `S3_ACCESS_KEY_ID` + `S3_SECRET_ACCESS_KEY` the SDK's default credential chain is used.
 */
export function createBlobStore(config: { homeDir: string; s3?: S3Settings }): BlobStore {
  if (config.s3) return new S3BlobStore(config.s3);
  return new LocalBlobStore(path.join(config.homeDir, 'files'));
}
