import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { bearerMatches } from './metrics-auth';

export const DEFAULT_WORKER_METRICS_PORT = 9091;

export interface MetricsServer {
  server: http.Server;
  port: number;
  close(): Promise<void>;
}

/**
 * A tiny HTTP server answering `GET /metrics` from `registry`: worker processes started apart from the API
 * (Procfile `worker`) have no Express app but are scraped too. In a single-process start (`npm start`) the
 * API and the workers share one registry and the API's /metrics serves it, so this is not needed there.
 */
export function startMetricsServer(registry: Registry, port = DEFAULT_WORKER_METRICS_PORT, opts: { token?: string; host?: string } = {}): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found\n');
      return;
    }
    if (opts.token && !bearerMatches(req.headers.authorization, opts.token)) {
      res.writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Bearer' }).end('Unauthorized\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body),
      () => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('Metrics collection failed\n'),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, opts.host, () => {
      server.off('error', reject);
      resolve({
        server,
        port: (server.address() as AddressInfo).port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}
