"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.mediaRoutes = mediaRoutes;
const express_1 = require("express");
const images_route_1 = require("./images.route");
const caller_1 = require("./caller");
/**
 * General media (interface.md "POST /v1/media", "GET /v1/media/{id}", "POST /v1/media/{id}/operations";
 * decisions.md section 5 for cancel). Records of running generations answer 202 with `Retry-After`.
 */
function mediaRoutes(d) {
    const r = (0, express_1.Router)();
    r.post('/v1/media', ...d.guard, async (req, res) => {
        (0, images_route_1.sendMediaReply)(res, await d.media.create((0, caller_1.callerOf)(res), req.body));
    });
    for (const path of ['/v1/media/:id', '/v2/media/:id']) {
        r.get(path, ...d.guard, async (req, res) => {
            (0, images_route_1.sendMediaReply)(res, await d.media.get((0, caller_1.callerOf)(res), String(req.params.id)));
        });
    }
    r.post('/v1/media/:id/operations', ...d.guard, async (req, res) => {
        (0, images_route_1.sendMediaReply)(res, await d.operations.operate((0, caller_1.callerOf)(res), String(req.params.id), req.body));
    });
    r.post('/v1/media/:id/cancel', ...d.guard, async (req, res) => {
        (0, images_route_1.sendMediaReply)(res, await d.media.cancel((0, caller_1.callerOf)(res), String(req.params.id)));
    });
    return r;
}
