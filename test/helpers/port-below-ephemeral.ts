import fs from 'node:fs';
import net from 'node:net';

/** The kernel's range of ephemeral ports (where it picks for port 0 and for outgoing connections). */
function ephemeralFloor(): number {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

/**
 * A port free now, for a process started later that must be told its port in advance. Chosen below the ephemeral range:
 * a port the kernel handed out for port 0 could be handed to another test's socket (or an outgoing connection) before
 * the process listens, and its listen would then fail (EADDRINUSE).
 */
export async function portBelowEphemeral(): Promise<number> {
  const floor = Math.min(ephemeralFloor(), 32768);
  for (;;) {
    const port = 10_000 + Math.floor(Math.random() * (floor - 10_000));
    const free = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(port, () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
}
