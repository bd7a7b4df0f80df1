/**
 * CI's Node 24 leg (scripts/ci-node24.sh): the tests that drive the client libraries, run on Node 24 with the
 * newest majors installed in .ci/node24/node_modules. The bare names the tests import are mapped there; inside those
 * packages Node's own lookup finds their dependencies beside them. ai 7 and @ai-sdk/* 4 ship ES modules only: the
 * script runs jest with --experimental-vm-modules, so jest's require() loads them as Node 24's require(esm) does.
 */
const path = require('node:path');
const base = require('../jest.config.js');

const root = path.resolve(__dirname, '..');
const clients = path.join(root, '.ci/node24/node_modules');
const CLIENTS = ['openai', 'ai', '@ai-sdk/openai', '@ai-sdk/openai-compatible', '@langchain/openai', '@langchain/core'];
const entry = (name) => require.resolve(name, { paths: [clients] });

module.exports = {
  ...base,
  rootDir: root,
  testMatch: [
    '<rootDir>/test/e2e/*.sdk.test.ts',
    '<rootDir>/test/api/idempotency.test.ts',
    '<rootDir>/test/api/images.test.ts',
    '<rootDir>/test/unit/fakes/fake-provider.test.ts',
    '<rootDir>/test/unit/formats/{chat,embeddings,schemas,responses-stream}.test.ts',
  ],
  moduleNameMapper: {
    ...Object.fromEntries(CLIENTS.map((name) => [`^${name.replace('/', '\\/')}$`, entry(name)])),
    ...base.moduleNameMapper,
  },
};
