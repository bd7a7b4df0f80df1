/** Jest 30 with the SWC transform: TypeScript 7 has no compiler API, so ts-jest is out; `npm run typecheck` checks types. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022', transform: { useDefineForClassFields: false } }, module: { type: 'commonjs' } }],
    // The OTLP exporter loads node:http with import(), which Jest's module sandbox refuses without
    // --experimental-vm-modules: that one package is compiled to require() for the tests (Node itself runs it as shipped).
    '/node_modules/@opentelemetry/otlp-exporter-base/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!@opentelemetry/otlp-exporter-base/)'],
  // The generated Prisma client imports its siblings as './x.js'; map them to the TypeScript sources.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  // A net for a test that hangs, not a time it must keep: four files at a time beside two busy processes on 2 cores
  // took some tests past 30 s of waiting for their events.
  testTimeout: 60000,
  // Most files wait on fake providers and timers more than they compute: four at a time took `npm test` from 300 s to
  // 205 s on a 2-core machine (two runs, all passing), and the leases-off leg from 128 s to 116 s.
  maxWorkers: 4,
};
