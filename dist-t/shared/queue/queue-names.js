"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.QUEUE_NAMES = exports.QUEUES = void 0;
/**
 * Queue names. NEVER rename one: jobs already in Redis under the old name would be stranded.
 * Queues by kind, so slow work never blocks fast work (decisions.md section 5).
 */
exports.QUEUES = {
    text: 'text',
    embeddings: 'embeddings',
    image: 'image',
    media: 'media',
    callbacks: 'callbacks',
    maintenance: 'maintenance',
};
exports.QUEUE_NAMES = Object.values(exports.QUEUES);
