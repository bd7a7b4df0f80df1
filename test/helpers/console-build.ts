import path from 'node:path';

/**
 * Builds the console (scripts/build-console.js) into dist/console from the sources as they are, so the tests serve
 * what the working tree holds, not what the last install built.
 */
export async function buildConsoleOnce(): Promise<{ raw: number; gzip: number; brotli: number } | null> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { buildConsole } = require(path.join(__dirname, '..', '..', 'scripts', 'build-console.js')) as {
    buildConsole(o: { quiet: boolean }): Promise<{ raw: number; gzip: number; brotli: number } | null>;
  };
  return buildConsole({ quiet: true });
}
