"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.LocalBlobStore = void 0;
const node_fs_1 = __importDefault(require("node:fs"));
const promises_1 = __importDefault(require("node:fs/promises"));
const node_path_1 = __importDefault(require("node:path"));
const node_crypto_1 = require("node:crypto");
const promises_2 = require("node:stream/promises");
const blob_store_1 = require("./blob-store");
/**
 * Files under one root folder (`<homeDir>/files` by default). Writes go to a temporary file in the same folder
 * and are renamed into place, so a reader never sees a partial file and a crash leaves only `.tmp-*` litter.
 */
class LocalBlobStore {
    root;
    ready;
    constructor(root) {
        this.root = root;
    }
    pathOf(key) {
        (0, blob_store_1.assertBlobKey)(key);
        return node_path_1.default.join(this.root, key);
    }
    ensureRoot() {
        this.ready ??= promises_1.default.mkdir(this.root, { recursive: true }).then(() => undefined);
        return this.ready;
    }
    async put(key, body, _contentType) {
        const target = this.pathOf(key);
        await this.ensureRoot();
        const tmp = node_path_1.default.join(this.root, `.tmp-${key}-${(0, node_crypto_1.randomBytes)(6).toString('hex')}`);
        try {
            if (Buffer.isBuffer(body))
                await promises_1.default.writeFile(tmp, body, { flag: 'wx' });
            else
                await (0, promises_2.pipeline)(body, node_fs_1.default.createWriteStream(tmp, { flags: 'wx' }));
            const { size } = await promises_1.default.stat(tmp);
            await promises_1.default.rename(tmp, target);
            return { size };
        }
        catch (e) {
            await promises_1.default.rm(tmp, { force: true });
            throw e;
        }
    }
    async get(key, range) {
        const file = this.pathOf(key);
        let handle;
        try {
            handle = await promises_1.default.open(file, 'r');
        }
        catch (e) {
            if (e.code === 'ENOENT')
                return null;
            throw e;
        }
        // Reading through the open handle: a concurrent delete cannot turn a found file into a failed stream.
        const { size } = await handle.stat();
        const body = handle.createReadStream(range ? { start: range.start, end: range.end ?? Math.max(size - 1, range.start) } : {});
        return { body, size };
    }
    async delete(key) {
        await promises_1.default.rm(this.pathOf(key), { force: true });
    }
}
exports.LocalBlobStore = LocalBlobStore;
