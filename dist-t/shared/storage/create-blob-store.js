"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.createBlobStore = createBlobStore;
const node_path_1 = __importDefault(require("node:path"));
const local_blob_store_1 = require("./local-blob-store");
const s3_blob_store_1 = require("./s3-blob-store");
/**
 * Local disk under `<homeDir>/files` (./.switchyard/files by default), or S3-compatible storage when
 * `S3_BUCKET` is set (decisions.md section 5; the S3_* variables are parsed in shared/config/env.ts). Without
 * `S3_ACCESS_KEY_ID` + `S3_SECRET_ACCESS_KEY` the SDK's default credential chain is used.
 */
function createBlobStore(config) {
    if (config.s3)
        return new s3_blob_store_1.S3BlobStore(config.s3);
    return new local_blob_store_1.LocalBlobStore(node_path_1.default.join(config.homeDir, 'files'));
}
