"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.OutputStore = void 0;
const media_mapper_1 = require("../../shared/formats/media.mapper");
const media_duration_1 = require("../../shared/formats/media-duration");
const mapper_utils_1 = require("../../shared/providers/mapper-utils");
/** Result files into our storage (generated files: AI_GENERATION, TEMP_GENERATION). */
class OutputStore {
    deps;
    opts;
    constructor(deps, opts) {
        this.deps = deps;
        this.opts = opts;
    }
    async saveBytes(data, bytes, mimeType) {
        const view = await this.deps.files.saveGenerated({
            organizationId: data.organizationId,
            userId: data.userId,
            apiKeyId: data.apiKeyId,
            generationId: data.generationId,
            bytes,
            mimeType,
        });
        const durationSeconds = /^(video|audio)\//.test(view.mimeType) ? (0, media_duration_1.mediaFileDuration)(bytes, view.mimeType) : undefined;
        return { fileId: view.id, url: view.url, mimeType: view.mimeType, size: view.size, ...(durationSeconds !== undefined && { durationSeconds }) };
    }
    /** Downloads a provider's output (or decodes a data: URL) and stores it. Failures are plain errors: the job retries. */
    async download(data, url, kind, cancel) {
        const inline = url.startsWith('data:') ? (0, mapper_utils_1.parseDataUrl)(url) : undefined;
        if (inline)
            return this.saveBytes(data, Buffer.from(inline.base64, 'base64'), (0, media_mapper_1.outputMimeType)(kind, url, inline.mimeType));
        const deadline = AbortSignal.timeout(this.opts.downloadTimeoutMs);
        const res = await this.opts.fetch(url, { signal: cancel ? AbortSignal.any([deadline, cancel]) : deadline });
        if (!res.ok)
            throw new Error(`downloading the provider's output failed: HTTP ${res.status}`);
        const bytes = Buffer.from(await res.arrayBuffer());
        return this.saveBytes(data, bytes, (0, media_mapper_1.outputMimeType)(kind, url, res.headers.get('content-type')));
    }
}
exports.OutputStore = OutputStore;
