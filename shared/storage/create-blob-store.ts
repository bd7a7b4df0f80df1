import path from 'node:path';
import type { BlobStore } from './blob-store';
import { LocalBlobStore } from './local-blob-store';
import { S3BlobStore } from './s3-blob-store';

/**
 * Local disk under `<homeDir>/files` (./.switchyard/files by default), or S3-compatible storage when
 * `S3_BUCKET` is set (decisions.md section 5). Other S3 settings: `S3_REGION` (default us-east-1),
 * `S3_ENDPOINT`, `S3_ACCESS_KEY_ID` + `S3_SECRET_ACCESS_KEY` (else the SDK's default credential chain),
 * `S3_FORCE_PATH_STYLE=true`, `S3_PREFIX` (folder inside the bucket).
 */
export function createBlobStore(config: { homeDir: string }, env: NodeJS.ProcessEnv = process.env): BlobStore {
  if (env.S3_BUCKET) {
    return new S3BlobStore({
      bucket: env.S3_BUCKET,
      region: env.S3_REGION || 'us-east-1',
      endpoint: env.S3_ENDPOINT || undefined,
      accessKeyId: env.S3_ACCESS_KEY_ID || undefined,
      secretAccessKey: env.S3_SECRET_ACCESS_KEY || undefined,
      forcePathStyle: env.S3_FORCE_PATH_STYLE === 'true' || env.S3_FORCE_PATH_STYLE === '1',
      prefix: env.S3_PREFIX || undefined,
    });
  }
  return new LocalBlobStore(path.join(config.homeDir, 'files'));
}
