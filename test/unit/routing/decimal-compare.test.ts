import { addDecimal, compareDecimal, formatDecimal, parseDecimal } from '../../../shared/routing/decimal-compare';

describe('decimal-compare', () => {
  it('compares decimal strings exactly where floats would not', () => {
    expect(0.1 + 0.2 > 0.3).toBe(true); // the float trap
    expect(compareDecimal(addDecimal('0.1', '0.2'), '0.3')).toBe(0);
    expect(compareDecimal(addDecimal(0.1, 0.2), 0.3)).toBe(0);
    expect(addDecimal('0.1', '0.2')).toBe('0.3');
  });

  it('orders values of different scales and signs', () => {
    expect(compareDecimal('1.10', '1.1')).toBe(0);
    expect(compareDecimal('1.000000000000000001', '1')).toBe(1);
    expect(compareDecimal('-0.5', '0')).toBe(-1);
    expect(compareDecimal('10', '9.999999')).toBe(1);
    expect(compareDecimal(40, '40.0')).toBe(0);
    expect(compareDecimal('.5', '0.5')).toBe(0);
  });

  it('accepts exponent forms (as String(number) produces them)', () => {
    expect(compareDecimal(1e-7, '0.0000001')).toBe(0);
    expect(compareDecimal('1.5E+3', 1500)).toBe(0);
    expect(formatDecimal(parseDecimal('2.50e1')!)).toBe('25');
    expect(addDecimal('-1.25', '0.25')).toBe('-1');
    expect(addDecimal()).toBe('0');
  });

  it('rejects what is not a decimal', () => {
    for (const bad of ['', 'abc', '1.2.3', '.', 'e5', '1e', NaN, Infinity, '1e99999']) {
      expect(parseDecimal(bad as string | number)).toBeUndefined();
    }
    expect(() => compareDecimal('x', '1')).toThrow(TypeError);
  });
});
