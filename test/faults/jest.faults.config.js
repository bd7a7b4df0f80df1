/**
 * The fault suite (npm run test:faults): real API and worker processes from the build, their own Redis and
 * PostgreSQL. Run in band: the cases start and kill processes and must not compete for the two CPUs.
 *   jest -c test/faults/jest.faults.config.js --runInBand
 * Files are *.fault.ts so the default `npm test` (testMatch **\/*.test.ts) never picks them up.
 */
const path = require('node:path');

module.exports = {
  rootDir: path.resolve(__dirname, '../..'),
  roots: ['<rootDir>/test/faults'],
  testMatch: ['**/*.fault.ts'],
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  globalSetup: '<rootDir>/test/faults/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/faults/helpers/global-teardown.ts',
  testTimeout: 120000,
  maxWorkers: 1,
};
