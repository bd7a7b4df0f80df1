/**
 * CI's leases-off leg (`npm run test:leases-off`): the suites that move money on the request path, run again with
 * reservation leases off (TEST_LEASES=0 → LEASE_REQUESTS=0), so every request takes the `reserved` path: the path of an
 * API-only process (Procfile's `web`, which never claims and so never leases) and of a caller whose room is below the
 * lease headroom (docs/architecture.md "Leases"). `npm test` runs every suite once with npm start's defaults (leases on).
 * A suite belongs here when it asserts what a request reserves, charges or releases.
 */
const path = require('node:path');
const base = require('../jest.config.js');

module.exports = {
  ...base,
  rootDir: path.resolve(__dirname, '..'),
  testMatch: [
    '<rootDir>/test/billing/*.test.ts',
    ...[
      'stream-failure-billing', 'reply-then-settle', 'text', 'media', 'media-cancel', 'images', 'embeddings', 'typed-questions',
      'idempotency', 'submission-paths', 'upstream-abort', 'queue-outage', 'foundation', 'key-permissions', 'security',
      'stream-endings', 'cut-stream-charge',
    ].map((name) => `<rootDir>/test/api/${name}.test.ts`),
    ...['batches.sdk', 'responses.sdk', 'text.sdk', 'retries.sdk', 'service-tiers.sdk'].map((name) => `<rootDir>/test/e2e/${name}.test.ts`),
  ],
};
