/**
 * The links the CLI and POST /v1/members hand out (decisions.md section 8): `<PUBLIC_BASE_URL>/console/invite#token=…`
 * and `/console/reset#token=…`. The token rides in the fragment, which browsers send to no server (no access log, no
 * Referer); the console's page reads it and posts it to /v1/auth/invite or /v1/auth/reset.
 */
export function consoleBaseUrl(config: { publicBaseUrl?: string; port: number }): string {
  return (config.publicBaseUrl ?? `http://localhost:${config.port}`).replace(/\/+$/, '');
}

export function inviteUrl(baseUrl: string, token: string): string {
  return `${baseUrl}/console/invite#token=${encodeURIComponent(token)}`;
}

export function resetUrl(baseUrl: string, token: string): string {
  return `${baseUrl}/console/reset#token=${encodeURIComponent(token)}`;
}
