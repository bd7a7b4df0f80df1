/** The public API, with the session cookie (same origin) and, on unsafe methods, the session's CSRF token. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface SessionBody {
  user: { id: string; email: string; role: 'owner' | 'admin' | 'member' };
  organization: { id: string; name: string };
  csrfToken: string;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export class Api {
  csrf: string | null = null;
  /** Called when a request answers 401: the session ended (logout elsewhere, idle, removed). */
  onUnauthorized: () => void = () => undefined;

  async raw(method: string, url: string, body?: unknown, extra: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { Accept: 'application/json', ...extra };
    let payload: BodyInit | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    if (UNSAFE.has(method) && this.csrf) headers['X-CSRF-Token'] = this.csrf;
    const res = await fetch(url, { method, headers, body: payload, credentials: 'same-origin', cache: 'no-store', signal });
    if (!res.ok) {
      let code = 'HTTP_' + res.status;
      let message = res.statusText || 'Request failed';
      try {
        const j = (await res.json()) as { error?: { code?: string; message?: string } };
        code = j.error?.code ?? code;
        message = j.error?.message ?? message;
      } catch {
        /* not our envelope */
      }
      if (res.status === 401 && !url.startsWith('/v1/auth/')) this.onUnauthorized();
      throw new ApiError(res.status, code, message);
    }
    return res;
  }

  async json<T>(method: string, url: string, body?: unknown): Promise<T> {
    const res = await this.raw(method, url, body);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  get<T>(url: string): Promise<T> {
    return this.json<T>('GET', url);
  }
}

/** A query string of the defined, non-empty values. */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}
