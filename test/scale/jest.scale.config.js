/**
 * The scale suite (npm run test:scale): the ordinary text, media, rate-limit and history tests, run against a
 * real Redis Cluster (3 masters + 3 replicas) and through a real PgBouncer in transaction pooling mode, both
 * started by the global setup (test/scale/global-setup.ts) from the binaries on PATH; plus the cluster's own
 * cases in test/scale/*.scale.ts (failover mid-burst, bull-board, routing statistics).
 * Run in band: one cluster, two CPUs.
 */
const path = require('node:path');
const base = require('../../jest.config.js');

module.exports = {
  ...base,
  rootDir: path.resolve(__dirname, '../..'),
  roots: ['<rootDir>/test'],
  testMatch: [
    '<rootDir>/test/api/text.test.ts',
    '<rootDir>/test/api/media.test.ts',
    '<rootDir>/test/api/foundation.test.ts',
    '<rootDir>/test/api/history.test.ts',
    '<rootDir>/test/unit/generation-bus.test.ts',
    '<rootDir>/test/scale/**/*.scale.ts',
  ],
  globalSetup: '<rootDir>/test/scale/global-setup.ts',
  globalTeardown: '<rootDir>/test/scale/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 1,
};
