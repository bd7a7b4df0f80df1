"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.runtimeFile = runtimeFile;
exports.writeRuntimeInfo = writeRuntimeInfo;
exports.readRuntimeInfo = readRuntimeInfo;
exports.removeRuntimeInfo = removeRuntimeInfo;
const node_fs_1 = __importDefault(require("node:fs"));
const node_path_1 = __importDefault(require("node:path"));
const process_utils_1 = require("./process-utils");
function runtimeFile(homeDir) {
    return node_path_1.default.join(homeDir, 'runtime.json');
}
function writeRuntimeInfo(homeDir, info) {
    node_fs_1.default.mkdirSync(homeDir, { recursive: true });
    (0, process_utils_1.writePrivateFile)(runtimeFile(homeDir), `${JSON.stringify(info, null, 2)}\n`);
}
/** The runtime info of a live service, or null (absent, unreadable, or written by a process now gone). */
function readRuntimeInfo(homeDir) {
    try {
        const info = JSON.parse(node_fs_1.default.readFileSync(runtimeFile(homeDir), 'utf8'));
        return info && typeof info.databaseUrl === 'string' && (0, process_utils_1.isAlive)(info.pid) ? info : null;
    }
    catch {
        return null;
    }
}
/** Removes runtime.json if this process wrote it. */
function removeRuntimeInfo(homeDir) {
    try {
        const info = JSON.parse(node_fs_1.default.readFileSync(runtimeFile(homeDir), 'utf8'));
        if (info.pid === process.pid)
            node_fs_1.default.rmSync(runtimeFile(homeDir), { force: true });
    }
    catch {
        // nothing to remove
    }
}
