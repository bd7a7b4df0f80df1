/**
 * CI's Node legs (scripts/ci-node.sh 22, scripts/ci-node.sh 26): the tests that drive the client libraries, run on
 * that Node with the newest majors installed in $NODE_LEG_DIR/node_modules (default .ci/node26). The bare names the tests import are mapped there; inside those
 * packages Node's own lookup finds their dependencies beside them. ai 7 and @ai-sdk/* 4 ship ES modules only: the
 * script runs jest with --experimental-vm-modules, so jest's require() loads them as Node's require(esm) does.
 */
const path = require('node:path');
const base = require('../jest.config.js');

const root = path.resolve(__dirname, '..');
const clients = path.join(root, process.env.NODE_LEG_DIR ?? '.ci/node26', 'node_modules');
const CLIENTS = ['openai', 'ai', '@ai-sdk/openai', '@ai-sdk/openai-compatible', '@langchain/openai', '@langchain/core'];
const entry = (name) => require.resolve(name, { paths: [clients] });

// Jest loads ES modules through require() natively only from Node 24.9: on older Nodes the leg's packages are compiled
// to CommonJS by the same SWC transform as our sources (Node itself runs them as shipped).
const major = Number(process.versions.node.split('.')[0]);
const legPackages = `${clients.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/.+\\.m?js$`;
const esmTransform = major >= 24 ? {} : { [legPackages]: ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] };

module.exports = {
  ...base,
  transform: { ...base.transform, ...esmTransform },
  transformIgnorePatterns: major >= 24 ? base.transformIgnorePatterns : ['^(?!.*/\\.ci/node\\d+/).*/node_modules/(?!@opentelemetry/otlp-exporter-base/)'],
  rootDir: root,
  testMatch: [
    '<rootDir>/test/e2e/*.sdk.test.ts',
    '<rootDir>/test/api/idempotency.test.ts',
    '<rootDir>/test/api/images.test.ts',
    '<rootDir>/test/unit/fakes/fake-provider.test.ts',
    '<rootDir>/test/unit/formats/{chat,embeddings,schemas,responses-stream}.test.ts',
  ],
  // CI runs the two legs at once: two files at a time each.
  maxWorkers: 2,
  moduleNameMapper: {
    ...Object.fromEntries(CLIENTS.map((name) => [`^${name.replace('/', '\\/')}$`, entry(name)])),
    ...base.moduleNameMapper,
  },
};
