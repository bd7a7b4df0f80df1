"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.imageProcessor = imageProcessor;
const media_executor_1 = require("../services/media-executor");
/** Queue `image`: image generations (OpenAI images at once, hosted image models as step jobs). */
function imageProcessor(deps, callbacks) {
    const executor = new media_executor_1.MediaExecutor(deps, deps.config.media, callbacks);
    return (job, token) => executor.run(job, token);
}
