"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.mediaProcessor = mediaProcessor;
const media_executor_1 = require("../services/media-executor");
/** Queue `media`: video, audio and upscale generations and media operations (step jobs). */
function mediaProcessor(deps, callbacks) {
    const executor = new media_executor_1.MediaExecutor(deps, deps.config.media, callbacks);
    return (job, token) => executor.run(job, token);
}
