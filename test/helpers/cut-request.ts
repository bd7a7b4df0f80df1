import net from 'node:net';
import { pause } from './until';

/**
 * A client that leaves mid-body: sends the request line, `headers` (with a Content-Length larger than `body`) and
 * `body`, then destroys the socket: once `reading` resolves (the caller sees the server read the body), else after
 * `holdMs` (a server in another process, which nothing here can watch), else at once. Resolves once it is closed.
 */
export async function sendCut(port: number, opts: { method?: string; path: string; headers: Record<string, string>; body: Buffer | string; reading?: Promise<unknown>; holdMs?: number }): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined); // a reset from the server is part of leaving
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const head = [`${opts.method ?? 'POST'} ${opts.path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(opts.headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
  socket.write(`${head}\r\n\r\n`);
  socket.write(opts.body);
  if (opts.reading) await opts.reading;
  // Pacing for a server of another process: it is likely reading by then; it must answer 499 either way.
  else if (opts.holdMs) await pause(opts.holdMs);
  const closed = new Promise((r) => socket.once('close', r));
  socket.destroy();
  await closed;
}
