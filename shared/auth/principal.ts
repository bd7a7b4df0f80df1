import { AppError } from '../errors/app-error';
import type { Role } from './tokens';

/**
 * Who makes a request: an API key, or a person by its personal-account token or its browser session
 * (api/middleware/auth.ts finds it). Services and
 * routes receive it; it is defined here so that they need nothing from the HTTP middleware.
 */
export type Principal =
  | {
      kind: 'key';
      organizationId: string;
      keyId: string;
      /** The user the key belongs to (its member), if any. */
      userId: string | null;
      allowedModels: string[];
      rateLimitPerMinute: number | null;
      /** The organization's cap on jobs running at once (null: none). */
      maxConcurrency?: number | null;
    }
  | {
      kind: 'user';
      organizationId: string;
      userId: string;
      role: Role;
      rateLimitPerMinute: number | null;
      maxConcurrency?: number | null;
      /** Signed in by the `sy_session` cookie (decisions.md section 8), not by a bearer token: the same rights. */
      session?: true;
    };

/** A key limited to some models asking for another: 403 (decisions.md section 2). */
export function assertModelAllowed(principal: Principal, model: string): void {
  if (principal.kind === 'key' && principal.allowedModels.length > 0 && !principal.allowedModels.includes(model)) {
    throw new AppError('FORBIDDEN', `This API key may not use model ${model}`);
  }
}

/** Who a generation or file belongs to: the organization, the key (if any) and the user (the key's member). */
export function ownerOf(p: Principal): { organizationId: string; apiKeyId: string | null; userId: string | null } {
  return { organizationId: p.organizationId, apiKeyId: p.kind === 'key' ? p.keyId : null, userId: p.userId };
}
