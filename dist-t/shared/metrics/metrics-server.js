"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_WORKER_METRICS_PORT = void 0;
exports.startMetricsServer = startMetricsServer;
const node_http_1 = __importDefault(require("node:http"));
const metrics_auth_1 = require("./metrics-auth");
exports.DEFAULT_WORKER_METRICS_PORT = 9091;
/**
 * A tiny HTTP server answering `GET /metrics` from `registry`: worker processes started apart from the API
 * (Procfile `worker`) have no Express app but are scraped too. In a single-process start (`npm start`) the
 * API and the workers share one registry and the API's /metrics serves it, so this is not needed there.
 */
function startMetricsServer(registry, port = exports.DEFAULT_WORKER_METRICS_PORT, opts = {}) {
    const server = node_http_1.default.createServer((req, res) => {
        const path = (req.url ?? '/').split('?')[0];
        if (req.method !== 'GET' || path !== '/metrics') {
            res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found\n');
            return;
        }
        if (opts.token && !(0, metrics_auth_1.bearerMatches)(req.headers.authorization, opts.token)) {
            res.writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Bearer' }).end('Unauthorized\n');
            return;
        }
        registry.metrics().then((body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body), () => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('Metrics collection failed\n'));
    });
    return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, opts.host, () => {
            server.off('error', reject);
            resolve({
                server,
                port: server.address().port,
                close: () => new Promise((done) => server.close(() => done())),
            });
        });
    });
}
