"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.MediaRecords = void 0;
const app_error_1 = require("../../shared/errors/app-error");
const media_mapper_1 = require("../../shared/formats/media.mapper");
const callbacks_service_1 = require("../../shared/services/callbacks.service");
const generation_service_1 = require("../../shared/services/generation.service");
/**
 * What images, media and media operations share once a generation is queued: reading the record (with fresh file
 * URLs), who may see it, waiting up to SYNC_WAIT_MS, the 200/202 reply, and the callBackUrl check.
 */
class MediaRecords {
    d;
    constructor(d) {
        this.d = d;
    }
    /** Waits up to SYNC_WAIT_MS for the job's final message; null when it did not come (the job goes on). */
    async wait(sub) {
        if (!sub.mailbox)
            return null;
        try {
            return await this.d.gateway.waitFinal(sub, this.d.syncWaitMs);
        }
        finally {
            sub.detach();
        }
    }
    /**
     * The media record: at once for async calls, else once the job ends or the wait runs out. `accepted` is for an
     * asynchronous call whose reply the interface fixes (an async `extend`: always `pending`, model the literal
     * `pending`): the record is shown as it was accepted, however far a fast worker has already taken it.
     */
    async answer(sub, async, accepted) {
        // 200 once it has ended (a failure is reported inside the record, interface.md rule 3), 202 while it runs.
        if (!async)
            await this.wait(sub);
        let g = await this.load(sub.id);
        if (async && accepted)
            g = { ...g, status: 'pending', model: accepted.model, result: null, error: null };
        return { status: generation_service_1.RUNNING.has(g.status) ? 202 : 200, body: (0, media_mapper_1.mediaRecord)(g), headers: this.hint(g) };
    }
    hint(g) {
        return generation_service_1.RUNNING.has(g.status) ? { 'Retry-After': String((0, media_mapper_1.retryAfterSeconds)(g.requestType)) } : undefined;
    }
    async checkCallback(url, path) {
        if (url === undefined)
            return undefined;
        try {
            await (0, callbacks_service_1.checkCallbackUrl)(url, { allowPrivate: this.d.callbackAllowPrivate });
        }
        catch (e) {
            if (e instanceof callbacks_service_1.CallbackUrlError)
                throw app_error_1.AppError.validation([{ path, message: e.message }], `Invalid callBackUrl: ${e.message}`);
            throw e;
        }
        return url;
    }
    async load(id) {
        return this.d.files.withFreshUrls(await this.d.db.generation.findUniqueOrThrow({ where: { id } }));
    }
    /**
     * A media generation the caller may see: an API key sees its own; a personal-account token the whole
     * organization (owner, admin) or its own (member). Anything else is 404, as if it did not exist.
     */
    async visible(principal, id) {
        const g = await this.d.db.generation.findFirst({
            where: {
                id,
                organizationId: principal.organizationId,
                apiType: { in: ['images', 'media'] },
                ...(principal.kind === 'key' ? { apiKeyId: principal.keyId } : principal.role === 'member' ? { userId: principal.userId } : {}),
            },
        });
        if (!g)
            throw new app_error_1.AppError('NOT_FOUND', `Generation ${id} not found`);
        return this.d.files.withFreshUrls(g);
    }
}
exports.MediaRecords = MediaRecords;
