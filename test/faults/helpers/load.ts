/** Steady load: `clients` callers each sending one request after another until stopped, every reply timed. */
import type { Reply } from './http';
import { pause } from '../../helpers/until';

export interface Sample {
  start: number;
  end: number;
  status: number;
  code?: string;
  text: string;
}

export interface Load {
  samples: Sample[];
  /** Stops sending and resolves once every caller's last request has answered. */
  stop(): Promise<Sample[]>;
}

export function startLoad(clients: number, send: (i: number) => Promise<Reply>, opts: { pauseMs?: number } = {}): Load {
  const samples: Sample[] = [];
  let running = true;
  let n = 0;
  const callers = Array.from({ length: clients }, async () => {
    while (running) {
      const start = Date.now();
      const r = await send(n++);
      samples.push({ start, end: Date.now(), status: r.status, code: r.json?.error?.code, text: r.status >= 500 || r.status <= 0 ? r.text.slice(0, 300) || (r.error ?? '') : '' });
      if (opts.pauseMs) await pause(opts.pauseMs); // pacing: a caller's think time
    }
  });
  return {
    samples,
    async stop() {
      running = false;
      await Promise.all(callers);
      return samples;
    },
  };
}
