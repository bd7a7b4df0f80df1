import type { Config } from '../config/env';
import type { RuntimeLogger } from './process-utils';

/** Where config/catalog.demo.json expects the fake providers. */
export const DEMO_DEFAULT_URL = 'http://127.0.0.1:4010';

/** How the demo's fake providers answer at first (docs/demo.md; `POST /_fake/knobs` changes it). */
export const DEMO_KNOBS = { latencyMs: 50, chunkDelayMs: 30 };

export interface DemoProviders {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Demo mode's fake providers (fakes/: the tests', benchmarks' and this demo's), one set per `npm start`: in its only
 * process, or under the cluster (WEB_CONCURRENCY above 1) in the parent, whose processes call them at
 * `demoProvidersUrl` (bin/start.ts). One set, so the knobs, the files and the batches a call leaves are the ones the
 * next call finds, whichever process makes it.
 */
export async function startDemoProviders(config: Pick<Config, 'demoProviderPort' | 'catalogPath'>, logger: RuntimeLogger): Promise<DemoProviders> {
  // Compiled into dist/fakes beside the service; loaded only in demo mode.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startFakeProvider } = require('../../fakes/fake-provider') as typeof import('../../fakes/fake-provider');
  const fake = await startFakeProvider({ port: config.demoProviderPort, knobs: DEMO_KNOBS });
  logger.info(`demo mode: fake providers on ${fake.url} (knobs: POST ${fake.url}/_fake/knobs, docs/demo.md); catalog ${config.catalogPath}`);
  return { url: fake.url, port: fake.port, close: () => fake.close() };
}

/** The fake providers a process of npm start's cluster calls: its parent's, on the port the parent passed it. */
export function demoProvidersUrl(config: Pick<Config, 'demoProviderPort'>): string {
  return `http://127.0.0.1:${config.demoProviderPort}`;
}
