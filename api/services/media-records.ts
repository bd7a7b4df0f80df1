import type { Generation } from '../../shared/db/generated/client';
import type { Db } from '../../shared/db/client';
import { AppError } from '../../shared/errors/app-error';
import { mediaRecord, retryAfterSeconds } from '../../shared/formats/media.mapper';
import { CallbackAddressPrivate, CallbackUrlError, checkCallbackUrl } from '../../shared/services/callbacks.service';
import type { FilesService } from '../../shared/services/files.service';
import { RUNNING } from '../../shared/services/generation.service';
import type { Principal } from '../../shared/auth/principal';
import type { GenerationGateway } from './generation-gateway';
import type { FinalMessage, Submission } from './generation-order';
import type { RoutePlanner } from './route-planner';
import { generationById } from '../../shared/db/generation-reads';
import { outwaited } from './text-replies';

/** A reply: status, body, headers (Retry-After while a generation runs). */
export interface MediaReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** What the images and media services are given. */
export interface MediaServiceDeps {
  planner: RoutePlanner;
  gateway: GenerationGateway;
  records: MediaRecords;
  files: FilesService;
}

export interface MediaRecordsDeps {
  db: Db;
  files: FilesService;
  gateway: GenerationGateway;
  syncWaitMs: number;
  callbackAllowPrivate: boolean;
  /**
   * Whether a private callBackUrl's refusal names the setting that allows it: in demo mode (development on one machine),
   * where the person reading the error is the operator; never to a deployment's tenants.
   */
  callbackPrivateHint?: boolean;
}

/**
 * What images, media and media operations share once a generation is queued: reading the record (with fresh file
 * URLs), who may see it, waiting up to SYNC_WAIT_MS, the 200/202 reply, and the callBackUrl check.
 */
export class MediaRecords {
  constructor(private readonly d: MediaRecordsDeps) {}

  /** Waits up to SYNC_WAIT_MS for the job's final message; null when it did not come (the job goes on: text-replies.ts outwaited). */
  async wait(sub: Submission): Promise<FinalMessage | null> {
    if (!sub.mailbox) return null;
    try {
      const m = (await this.d.gateway.waitFinal(sub, this.d.syncWaitMs)) ?? (await outwaited(this.d.gateway, sub, { goesOn: true }));
      return m === 'running' ? null : m;
    } finally {
      sub.detach();
    }
  }

  /**
   * The media record: at once for async calls, else once the job ends or the wait runs out. `accepted` is for an
   * asynchronous call whose reply the interface fixes (an async `extend`: always `pending`, model the literal
   * `pending`): the record is shown as it was accepted, however far a fast worker has already taken it.
   */
  async answer(sub: Submission, async: boolean, accepted?: { model: string }): Promise<MediaReply> {
    // 200 once it has ended (a failure is reported inside the record, interface.md rule 3), 202 while it runs.
    if (!async) await this.wait(sub);
    let g = await this.load(sub.id);
    if (async && accepted) g = { ...g, status: 'pending', model: accepted.model, result: null, error: null };
    return { status: RUNNING.has(g.status) ? 202 : 200, body: mediaRecord(g), headers: this.hint(g) };
  }

  hint(g: Generation): Record<string, string> | undefined {
    return RUNNING.has(g.status) ? { 'Retry-After': String(retryAfterSeconds(g.requestType)) } : undefined;
  }

  async checkCallback(url: string | undefined, path: string): Promise<string | undefined> {
    if (url === undefined) return undefined;
    try {
      await checkCallbackUrl(url, { allowPrivate: this.d.callbackAllowPrivate });
    } catch (e) {
      if (e instanceof CallbackUrlError) {
        const message = e instanceof CallbackAddressPrivate && this.d.callbackPrivateHint ? `${e.message}; CALLBACK_ALLOW_PRIVATE=true allows private addresses (development only)` : e.message;
        throw AppError.validation([{ path, message }], `Invalid callBackUrl: ${message}`);
      }
      throw e;
    }
    return url;
  }

  async load(id: string): Promise<Generation> {
    const g = await generationById(this.d.db, id, (where) => this.d.db.generation.findFirst({ where }));
    if (!g) throw new Error(`generation ${id} is not recorded`);
    return this.d.files.withFreshUrls(g);
  }

  /**
   * A media generation the caller may see: an API key sees its own; a personal-account token the whole
   * organization (owner, admin) or its own (member). Anything else is 404, as if it did not exist.
   */
  async visible(principal: Principal, id: string): Promise<Generation> {
    const g = await this.d.db.generation.findFirst({
      where: {
        id,
        organizationId: principal.organizationId,
        apiType: { in: ['images', 'media'] },
        ...(principal.kind === 'key' ? { apiKeyId: principal.keyId } : principal.role === 'member' ? { userId: principal.userId } : {}),
      },
    });
    if (!g) throw new AppError('NOT_FOUND', `Generation ${id} not found`);
    return this.d.files.withFreshUrls(g);
  }
}
