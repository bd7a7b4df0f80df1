"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.parseFakeArgs = parseFakeArgs;
/**
 * Runs one fake provider until SIGINT/SIGTERM and prints its URL as the first stdout line:
 *   node dist/test/fakes/main.js [--port 4010] [--host 127.0.0.1] [--knobs '{"latencyMs":20}']
 * Knobs can also be changed at runtime: POST {url}/_fake/knobs, POST {url}/_fake/reset, GET {url}/_fake/requests.
 */
const node_util_1 = require("node:util");
const fake_provider_1 = require("./fake-provider");
function parseFakeArgs(argv) {
    const { values } = (0, node_util_1.parseArgs)({
        args: argv,
        options: { port: { type: 'string' }, host: { type: 'string' }, knobs: { type: 'string' } },
        strict: true,
    });
    const port = Number(values.port ?? process.env.FAKE_PROVIDER_PORT ?? 0);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new Error(`invalid --port: ${values.port}`);
    const knobs = values.knobs ? JSON.parse(values.knobs) : {};
    if (typeof knobs !== 'object' || knobs === null || Array.isArray(knobs))
        throw new Error('--knobs must be a JSON object');
    return { port, host: values.host ?? '127.0.0.1', knobs: knobs };
}
async function main() {
    const fake = await (0, fake_provider_1.startFakeProvider)(parseFakeArgs(process.argv.slice(2)));
    process.stdout.write(`${fake.url}\n`);
    const stop = () => void fake.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
}
if (require.main === module) {
    main().catch((err) => {
        process.stderr.write(`fake provider: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
    });
}
