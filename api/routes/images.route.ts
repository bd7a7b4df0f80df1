import { Router, type RequestHandler, type Response } from 'express';
import type { ImagesService } from '../services/images.service';
import type { MediaReply } from '../services/media-records';
import { callerOf } from './route-helpers';

export function sendMediaReply(res: Response, reply: MediaReply): void {
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  res.status(reply.status).json(reply.body);
}

/**
 * POST /v2/images/generations, and the same at /v1/images/generations so an OpenAI SDK pointed at the v1 root
 * works (decisions.md section 6). 200 with the image result; 202 with the pending body when the generation
 * outlasts SYNC_WAIT_MS (poll GET /v1/media/{id}).
 */
export function imagesRoutes(d: { guard: RequestHandler[]; images: ImagesService }): Router {
  const r = Router();
  for (const path of ['/v2/images/generations', '/v1/images/generations']) {
    r.post(path, ...d.guard, async (req, res) => {
      sendMediaReply(res, await d.images.generate(callerOf(res), req.body));
    });
  }
  return r;
}
