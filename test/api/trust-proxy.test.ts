import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { LOGIN_LIMITS, LoginThrottle } from '../../shared/auth/login-throttle';
import { loadConfig } from '../../shared/config/env';

/**
 * TRUST_PROXY (README "Configuration"): the sign-in throttle counts failures per client address, which behind a proxy
 * is the address the proxy reports in X-Forwarded-For, and only then. Without the setting a client cannot pick its
 * own address by sending the header (and dodge the throttle); with it, one client's failures do not lock out everyone
 * behind the same proxy.
 */
let trusting: TestApp;
let direct: TestApp;
beforeAll(async () => {
  [trusting, direct] = await Promise.all([createTestApp({ env: { TRUST_PROXY: 'loopback' } }), createTestApp()]);
});
afterAll(async () => {
  await Promise.all([trusting.close(), direct.close()]);
});

/** The address's failures up to the limit, as the app's own throttle counts them. */
async function exhaust(h: TestApp, address: string): Promise<void> {
  const throttle = new LoginThrottle(h.redis, h.prefix);
  for (let i = 0; i < LOGIN_LIMITS.perAddress; i++) await throttle.attempt(`guess${i}@example.com`, address);
}
const login = (h: TestApp, forwardedFor: string) =>
  request(h.app).post('/v1/auth/login').set('X-Forwarded-For', forwardedFor).send({ email: 'nobody@example.com', password: 'wrong password 1' });

it('behind a trusted proxy: the throttled address waits, another client behind the same proxy does not', async () => {
  await exhaust(trusting, '198.51.100.1');
  expect((await login(trusting, '198.51.100.1')).status).toBe(429);
  expect((await login(trusting, '198.51.100.2')).status).toBe(401);
});

it('without TRUST_PROXY the header is not believed: the socket address is the one counted', async () => {
  await exhaust(direct, '198.51.100.1');
  // The header names the throttled address: not believed, so not throttled...
  expect((await login(direct, '198.51.100.1')).status).toBe(401);
  // ...and once the socket's own address is throttled, no header gets a client out of it.
  for (const loopback of ['127.0.0.1', '::ffff:127.0.0.1', '::1']) await exhaust(direct, loopback);
  expect((await login(direct, '198.51.100.9')).status).toBe(429);
});

it('TRUST_PROXY takes a boolean word, a number of hops or a list of addresses', () => {
  expect(loadConfig({}, []).trustProxy).toBe(false);
  expect(loadConfig({ TRUST_PROXY: 'true' }, []).trustProxy).toBe(true);
  expect(loadConfig({ TRUST_PROXY: '2' }, []).trustProxy).toBe(2);
  expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }, []).trustProxy).toBe('loopback, 10.0.0.0/8');
});
