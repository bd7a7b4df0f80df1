/**
 * Runs one fake provider until SIGINT/SIGTERM and prints its URL as the first stdout line:
 *   node dist/fakes/main.js [--port 4010] [--host 127.0.0.1] [--knobs '{"latencyMs":20}']
 * Knobs can also be changed at runtime: POST {url}/_fake/knobs, POST {url}/_fake/reset, GET {url}/_fake/requests.
 */
import { parseArgs } from 'node:util';
import { startFakeProvider } from './fake-provider';
import type { FakeKnobs } from './fake-provider';

export interface FakeMainOptions {
  port: number;
  host: string;
  knobs: FakeKnobs;
}

export function parseFakeArgs(argv: string[]): FakeMainOptions {
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: 'string' }, host: { type: 'string' }, knobs: { type: 'string' } },
    strict: true,
  });
  const port = Number(values.port ?? process.env.FAKE_PROVIDER_PORT ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid --port: ${values.port}`);
  const knobs: unknown = values.knobs ? JSON.parse(values.knobs) : {};
  if (typeof knobs !== 'object' || knobs === null || Array.isArray(knobs)) throw new Error('--knobs must be a JSON object');
  return { port, host: values.host ?? '127.0.0.1', knobs: knobs as FakeKnobs };
}

async function main(): Promise<void> {
  const fake = await startFakeProvider(parseFakeArgs(process.argv.slice(2)));
  process.stdout.write(`${fake.url}\n`);
  const stop = (): void => void fake.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`fake provider: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
