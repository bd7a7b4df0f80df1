"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.S3BlobStore = void 0;
const client_s3_1 = require("@aws-sdk/client-s3");
const blob_store_1 = require("./blob-store");
/** `total` from `Content-Range: bytes 0-99/1234`. */
function totalFromContentRange(v) {
    const m = /\/(\d+)$/.exec(v ?? '');
    return m ? Number(m[1]) : undefined;
}
function isNotFound(e) {
    const err = e;
    return err?.name === 'NoSuchKey' || err?.name === 'NotFound' || err?.$metadata?.httpStatusCode === 404;
}
/** S3 or any S3-compatible storage through the official AWS SDK v3. */
class S3BlobStore {
    client;
    bucket;
    prefix;
    constructor(opts) {
        this.bucket = opts.bucket;
        this.prefix = opts.prefix ?? '';
        const config = {
            region: opts.region,
            endpoint: opts.endpoint,
            forcePathStyle: opts.forcePathStyle,
            // Checksums only where S3 demands them: many S3-compatible stores reject the newer default trailers.
            requestChecksumCalculation: 'WHEN_REQUIRED',
            responseChecksumValidation: 'WHEN_REQUIRED',
        };
        if (opts.accessKeyId && opts.secretAccessKey)
            config.credentials = { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey };
        this.client = opts.client ?? new client_s3_1.S3Client(config);
    }
    objectKey(key) {
        (0, blob_store_1.assertBlobKey)(key);
        return `${this.prefix}${key}`;
    }
    async put(key, body, contentType, size) {
        // A single PUT needs a known length; a stream without one is read into memory (callers bound upload sizes).
        const payload = Buffer.isBuffer(body) || size === undefined ? (Buffer.isBuffer(body) ? body : await (0, blob_store_1.readAll)(body)) : body;
        await this.client.send(new client_s3_1.PutObjectCommand({
            Bucket: this.bucket,
            Key: this.objectKey(key),
            Body: payload,
            ContentType: contentType,
            ContentLength: Buffer.isBuffer(payload) ? payload.length : size,
        }));
        return { size: Buffer.isBuffer(payload) ? payload.length : size };
    }
    async get(key, range) {
        try {
            const out = await this.client.send(new client_s3_1.GetObjectCommand({
                Bucket: this.bucket,
                Key: this.objectKey(key),
                Range: range ? `bytes=${range.start}-${range.end ?? ''}` : undefined,
            }));
            const size = totalFromContentRange(out.ContentRange) ?? out.ContentLength ?? 0;
            return { body: out.Body, size, contentType: out.ContentType };
        }
        catch (e) {
            if (isNotFound(e))
                return null;
            throw e;
        }
    }
    async delete(key) {
        // S3 answers 204 for a missing key too, so a repeated delete is harmless.
        await this.client.send(new client_s3_1.DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
    }
}
exports.S3BlobStore = S3BlobStore;
