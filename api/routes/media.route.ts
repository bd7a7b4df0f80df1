import { Router, type RequestHandler } from 'express';
import type { MediaService } from '../services/media.service';
import type { MediaOperationsService } from '../services/media-operations.service';
import { sendMediaReply } from './images.route';
import { callerOf } from './route-helpers';

/**
 * General media (interface.md "POST /v1/media", "GET /v1/media/{id}", "POST /v1/media/{id}/operations";
 * decisions.md section 5 for cancel). Records of running generations answer 202 with `Retry-After`.
 */
export function mediaRoutes(d: { guard: RequestHandler[]; media: MediaService; operations: MediaOperationsService }): Router {
  const r = Router();
  r.post('/v1/media', ...d.guard, async (req, res) => {
    sendMediaReply(res, await d.media.create(callerOf(res), req.body));
  });
  for (const path of ['/v1/media/:id', '/v2/media/:id']) {
    r.get(path, ...d.guard, async (req, res) => {
      sendMediaReply(res, await d.media.get(callerOf(res), String(req.params.id)));
    });
  }
  r.post('/v1/media/:id/operations', ...d.guard, async (req, res) => {
    sendMediaReply(res, await d.operations.operate(callerOf(res), String(req.params.id), req.body));
  });
  r.post('/v1/media/:id/cancel', ...d.guard, async (req, res) => {
    sendMediaReply(res, await d.media.cancel(callerOf(res), String(req.params.id)));
  });
  return r;
}
