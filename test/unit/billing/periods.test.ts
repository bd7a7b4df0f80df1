import { periodStart } from '../../../shared/billing/periods';

describe('periodStart (01:00 Moscow time = 22:00 UTC the day before)', () => {
  it.each([
    ['daily', '2026-11-22T21:59:59.999Z', '2026-11-21T22:00:00.000Z'],
    ['daily', '2026-11-22T22:00:00.000Z', '2026-11-22T22:00:00.000Z'],
    ['weekly', '2026-11-22T21:59:59.000Z', '2026-11-15T22:00:00.000Z'], // Sunday evening: week began last Monday
    ['weekly', '2026-11-22T22:00:00.000Z', '2026-11-22T22:00:00.000Z'], // Monday 01:00 MSK
    ['weekly', '2026-11-25T10:00:00.000Z', '2026-11-22T22:00:00.000Z'],
    ['monthly', '2026-11-30T21:59:00.000Z', '2026-10-31T22:00:00.000Z'],
    ['monthly', '2026-11-30T22:00:00.000Z', '2026-11-30T22:00:00.000Z'], // 1 December 01:00 MSK
    ['monthly', '2026-12-31T22:30:00.000Z', '2026-12-31T22:00:00.000Z'], // 1 January
  ] as const)('%s at %s starts at %s', (reset, at, start) => {
    expect(periodStart(reset, new Date(at)).toISOString()).toBe(start);
  });

  it('never is all time', () => {
    expect(periodStart('never', new Date()).getTime()).toBe(0);
  });
});
