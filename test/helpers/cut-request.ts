import net from 'node:net';

/**
 * A client that leaves mid-body: sends the request line, `headers` (with a Content-Length larger than `body`) and
 * `body`, waits `holdMs` so the server is reading the body, then destroys the socket. Resolves once it is closed.
 */
export async function sendCut(port: number, opts: { method?: string; path: string; headers: Record<string, string>; body: Buffer | string; holdMs?: number }): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined); // a reset from the server is part of leaving
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const head = [`${opts.method ?? 'POST'} ${opts.path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(opts.headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
  socket.write(`${head}\r\n\r\n`);
  socket.write(opts.body);
  await new Promise((r) => setTimeout(r, opts.holdMs ?? 200));
  const closed = new Promise((r) => socket.once('close', r));
  socket.destroy();
  await closed;
}
