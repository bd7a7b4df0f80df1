import { Router, type Response } from 'express';
import type { AppContext } from '../app-context';
import { MediaService } from '../services/media.service';
import { sendMediaReply } from './images.route';

/**
 * General media (interface.md "POST /v1/media", "GET /v1/media/{id}", "POST /v1/media/{id}/operations";
 * decisions.md section 5 for cancel). Records of running generations answer 202 with `Retry-After`.
 */
export function mediaRoutes(ctx: AppContext): Router {
  const r = Router();
  const media = new MediaService(ctx);
  const who = (res: Response) => ({ principal: res.locals.principal, traceId: res.locals.traceId, idempotency: res.locals.idempotency });

  r.post('/v1/media', ...ctx.guard, async (req, res) => {
    sendMediaReply(res, await media.createMedia(who(res), req.body));
  });
  for (const path of ['/v1/media/:id', '/v2/media/:id']) {
    r.get(path, ...ctx.guard, async (req, res) => {
      sendMediaReply(res, await media.get(who(res), String(req.params.id)));
    });
  }
  r.post('/v1/media/:id/operations', ...ctx.guard, async (req, res) => {
    sendMediaReply(res, await media.operate(who(res), String(req.params.id), req.body));
  });
  r.post('/v1/media/:id/cancel', ...ctx.guard, async (req, res) => {
    sendMediaReply(res, await media.cancel(who(res), String(req.params.id)));
  });
  return r;
}
