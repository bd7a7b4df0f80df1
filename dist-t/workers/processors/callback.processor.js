"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.callbackProcessor = callbackProcessor;
const bullmq_1 = require("bullmq");
const media_mapper_1 = require("../../shared/formats/media.mapper");
const callbacks_service_1 = require("../../shared/services/callbacks.service");
/**
 * Queue `callbacks`: POSTs the generation's media record, signed (shared/services/callbacks.service.ts).
 * A non-2xx reply or a network error throws, so BullMQ retries with exponential back-off (at most 8 attempts,
 * job catalog); a refused URL (private address, bad scheme) fails at once.
 */
function callbackProcessor(deps) {
    return async (job) => {
        const { generationId, organizationId, url, status } = job.data;
        const [generation, org] = await Promise.all([
            deps.db.generation.findUnique({ where: { id: generationId } }),
            deps.db.organization.findUnique({ where: { id: organizationId }, select: { callbackSecret: true } }),
        ]);
        if (!generation || !org)
            return;
        // Signed as of the job's creation: every retry sends the same signed body (its URLs expire FILE_URL_TTL_SECONDS
        // after the first attempt, docs/callbacks.md).
        const body = JSON.stringify((0, media_mapper_1.mediaRecord)(deps.files.withFreshUrls(generation, new Date(job.timestamp))));
        let code;
        try {
            code = await (0, callbacks_service_1.postCallback)({ url, body, secret: org.callbackSecret, status }, { allowPrivate: deps.config.callbackAllowPrivate });
        }
        catch (e) {
            const refused = e instanceof callbacks_service_1.CallbackUrlError || e.code === 'ECALLBACKPRIVATE';
            if (refused)
                throw new bullmq_1.UnrecoverableError(`callback URL refused: ${e.message}`);
            throw e;
        }
        if (code < 200 || code >= 300)
            throw new Error(`callback receiver answered HTTP ${code}`);
    };
}
