import type { Request } from 'express';

/** nginx's "client closed request": the status logs and metrics give a request whose client left first. */
export const CLIENT_CLOSED_STATUS = 499;

/**
 * The client closed the connection before its body ended. body-parser marks it with this `type`; our own body
 * readers (jsonBody, the upload route) reject with the same error, so the error handler has one rule for it.
 */
export const bodyAborted = (): Error => Object.assign(new Error('request aborted'), { type: 'request.aborted' });
export const isBodyAborted = (err: unknown): boolean => (err as { type?: unknown } | undefined)?.type === 'request.aborted';

/** Calls `gone` once if the client closes the connection before its body ended: already, or later. */
export function onClientGone(req: Request, gone: () => void): void {
  if (req.complete) return;
  if (req.destroyed) return gone();
  req.once('close', () => {
    if (!req.complete) gone();
  });
}
