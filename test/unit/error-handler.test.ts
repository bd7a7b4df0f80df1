import { toAppError } from '../../api/middleware/error-handler';

describe('toAppError', () => {
  it.each([
    [{ name: 'error', code: '57P03', message: 'the database system is shutting down' }],
    [{ name: 'error', code: '57P01', message: 'terminating connection due to administrator command' }],
    [{ name: 'error', code: '08006', message: 'connection failure' }],
    [{ message: 'Database error. Code: `57P03`' }],
    [{ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' }],
    [{ message: "Stream isn't writeable and enableOfflineQueue options is false" }],
  ])('maps an unreachable database or Redis to 503: %j', (err) => {
    expect(toAppError(Object.assign(new Error(err.message), err)).code).toBe('SERVICE_UNAVAILABLE');
  });

  it('keeps anything else a 500 without details', () => {
    expect(toAppError(new TypeError('x is undefined')).code).toBe('INTERNAL_ERROR');
    expect(toAppError({ name: 'error', code: '23505', message: 'duplicate key' }).code).toBe('INTERNAL_ERROR');
  });
});
