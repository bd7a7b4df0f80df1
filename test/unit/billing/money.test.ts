import { compareMoney, money, parseMoney } from '../../../shared/money';

describe('money decimals (routing compares prices with them)', () => {
  it('compares decimal strings exactly where floats would not', () => {
    expect(0.1 + 0.2 > 0.3).toBe(true); // the float trap
    expect(compareMoney(money('0.1').plus('0.2'), '0.3')).toBe(0);
    expect(compareMoney(money(0.1).plus(0.2), 0.3)).toBe(0);
    expect(money('0.1').plus('0.2').toFixed()).toBe('0.3');
  });

  it('orders values of different scales and signs', () => {
    expect(compareMoney('1.10', '1.1')).toBe(0);
    expect(compareMoney('1.000000000000000001', '1')).toBe(1);
    expect(compareMoney('-0.5', '0')).toBe(-1);
    expect(compareMoney('10', '9.999999')).toBe(1);
    expect(compareMoney(40, '40.0')).toBe(0);
    expect(compareMoney('.5', '0.5')).toBe(0);
    expect(compareMoney(' 2 ', '2')).toBe(0);
  });

  it('accepts exponent forms (as String(number) produces them)', () => {
    expect(compareMoney(1e-7, '0.0000001')).toBe(0);
    expect(compareMoney('1.5E+3', 1500)).toBe(0);
    expect(parseMoney('2.50e1')!.toFixed()).toBe('25');
    expect(money('-1.25').plus('0.25').toFixed()).toBe('-1');
  });

  it('rejects what is not a decimal', () => {
    for (const bad of ['', 'abc', '1.2.3', '.', 'e5', '1e', NaN, Infinity, '1e99999', 'Infinity', '0x10', null, {}]) {
      expect(parseMoney(bad)).toBeUndefined();
    }
  });
});
