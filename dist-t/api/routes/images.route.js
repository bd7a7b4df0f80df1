"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.sendMediaReply = sendMediaReply;
exports.imagesRoutes = imagesRoutes;
const express_1 = require("express");
const caller_1 = require("./caller");
function sendMediaReply(res, reply) {
    for (const [k, v] of Object.entries(reply.headers ?? {}))
        res.setHeader(k, v);
    res.status(reply.status).json(reply.body);
}
/**
 * POST /v2/images/generations, and the same at /v1/images/generations so an OpenAI SDK pointed at the v1 root
 * works (decisions.md section 6). 200 with the image result; 202 with the pending body when the generation
 * outlasts SYNC_WAIT_MS (poll GET /v1/media/{id}).
 */
function imagesRoutes(d) {
    const r = (0, express_1.Router)();
    for (const path of ['/v2/images/generations', '/v1/images/generations']) {
        r.post(path, ...d.guard, async (req, res) => {
            sendMediaReply(res, await d.images.generate((0, caller_1.callerOf)(res), req.body));
        });
    }
    return r;
}
