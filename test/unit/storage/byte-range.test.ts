import { resolveRange } from '../../../shared/storage/byte-range';

describe('resolveRange', () => {
  it.each([
    ['bytes=0-99', 1000, { start: 0, end: 99 }],
    ['bytes=100-', 1000, { start: 100, end: 999 }],
    ['bytes=-100', 1000, { start: 900, end: 999 }],
    ['bytes=-5000', 1000, { start: 0, end: 999 }],
    ['bytes=990-5000', 1000, { start: 990, end: 999 }],
    ['bytes=999-999', 1000, { start: 999, end: 999 }],
  ])('%s of %d bytes is %j', (header, size, expected) => {
    expect(resolveRange(header, size)).toEqual(expected);
  });

  it.each([['bytes=1000-'], ['bytes=1000-1001'], ['bytes=-0']])('%s of 1000 bytes is unsatisfiable', (header) => {
    expect(resolveRange(header, 1000)).toBe('unsatisfiable');
  });

  it('finds nothing to serve in an empty file', () => {
    expect(resolveRange('bytes=0-', 0)).toBe('unsatisfiable');
    expect(resolveRange('bytes=-1', 0)).toBe('unsatisfiable');
  });

  it.each([[undefined], [''], ['items=0-1'], ['bytes=5-1'], ['bytes=0-1,5-6'], ['bytes=-'], ['bytes=a-b']])('ignores %j (the whole file is served)', (header) => {
    expect(resolveRange(header, 1000)).toBeNull();
  });
});
