import { outputMimeType } from '../../shared/formats/media.mapper';
import { mediaFileDuration } from '../../shared/formats/media-duration';
import { parseDataUrl } from '../../shared/providers/mapper-utils';
import type { MediaJobData, MediaKind, SavedOutput } from '../../shared/schemas/media.schema';
import type { WorkerDeps } from '../worker-deps';

/** Result files into our storage (generated files: AI_GENERATION, TEMP_GENERATION). */
export class OutputStore {
  constructor(
    private readonly deps: WorkerDeps,
    private readonly opts: { fetch: typeof fetch; downloadTimeoutMs: number },
  ) {}

  async saveBytes(data: MediaJobData, bytes: Buffer, mimeType: string): Promise<Omit<SavedOutput, 'source'>> {
    const view = await this.deps.files.saveGenerated({
      organizationId: data.organizationId,
      userId: data.userId,
      apiKeyId: data.apiKeyId,
      generationId: data.generationId,
      bytes,
      mimeType,
    });
    const durationSeconds = /^(video|audio)\//.test(view.mimeType) ? mediaFileDuration(bytes, view.mimeType) : undefined;
    return { fileId: view.id, url: view.url, mimeType: view.mimeType, size: view.size, ...(durationSeconds !== undefined && { durationSeconds }) };
  }

  /** Downloads a provider's output (or decodes a data: URL) and stores it. Failures are plain errors: the job retries. */
  async download(data: MediaJobData, url: string, kind: MediaKind, cancel?: AbortSignal): Promise<Omit<SavedOutput, 'source'>> {
    const inline = url.startsWith('data:') ? parseDataUrl(url) : undefined;
    if (inline) return this.saveBytes(data, Buffer.from(inline.base64, 'base64'), outputMimeType(kind, url, inline.mimeType));
    const deadline = AbortSignal.timeout(this.opts.downloadTimeoutMs);
    const res = await this.opts.fetch(url, { signal: cancel ? AbortSignal.any([deadline, cancel]) : deadline });
    if (!res.ok) throw new Error(`downloading the provider's output failed: HTTP ${res.status}`);
    const bytes = Buffer.from(await res.arrayBuffer());
    return this.saveBytes(data, bytes, outputMimeType(kind, url, res.headers.get('content-type')));
  }
}
