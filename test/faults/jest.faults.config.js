/**
 * The fault suite (npm run test:faults): real API and worker processes from the build, their own Redis and
 * PostgreSQL. Two cases at a time: a case mostly waits (provider latency, outages, lock lapses), so two share the
 * two CPUs: four runs of all 27 passed that way in 217-265 s, against 385 s one at a time on the same 2-core machine.
 * `--runInBand` runs them one at a time (a case's timing figures without a neighbour).
 *   jest -c test/faults/jest.faults.config.js
 * Files are *.fault.ts so the default `npm test` (testMatch **\/*.test.ts) never picks them up.
 */
const path = require('node:path');

module.exports = {
  rootDir: path.resolve(__dirname, '../..'),
  roots: ['<rootDir>/test/faults'],
  testMatch: ['**/*.fault.ts'],
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022', transform: { useDefineForClassFields: false } }, module: { type: 'commonjs' } }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  globalSetup: '<rootDir>/test/faults/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/faults/helpers/global-teardown.ts',
  testTimeout: 120000,
  maxWorkers: 2,
};
