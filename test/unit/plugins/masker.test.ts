import { MaskSession } from '../../../shared/plugins/masker';

describe('masker', () => {
  it('replaces e-mails, phones, card numbers, IBANs and IPs with placeholders and restores them', () => {
    const m = new MaskSession();
    const text = 'Mail ivan.petrov@example.ru or call +7 (912) 345-67-89; card 4111 1111 1111 1111; IBAN DE89 3704 0044 0532 0130 00; host 10.1.2.3';
    const masked = m.mask(text);
    expect(masked).toBe('Mail [EMAIL_1] or call [PHONE_1]; card [CARD_1]; IBAN [IBAN_1]; host [IP_1]');
    expect(m.unmask(`Reply to [EMAIL_1] about [CARD_1]`)).toBe('Reply to ivan.petrov@example.ru about 4111 1111 1111 1111');
  });

  it('gives the same value the same placeholder, leaves non-Luhn digit runs and short numbers alone', () => {
    const m = new MaskSession();
    expect(m.mask('a@b.co and a@b.co, order 1234 5678 9012 3456, year 2026')).toBe('[EMAIL_1] and [EMAIL_1], order 1234 5678 9012 3456, year 2026');
  });

  it('unmasks a stream whose placeholders are split across deltas', () => {
    const m = new MaskSession();
    m.mask('write to x@y.com');
    const u = m.streamUnmasker();
    const out = ['Sent to [EM', 'AIL_', '1] now', ' [not a placeholder'].map((d) => u.push(d)).join('') + u.flush();
    expect(out).toBe('Sent to x@y.com now [not a placeholder');
  });

  it('leaves unknown placeholders as they are', () => {
    const m = new MaskSession();
    m.mask('x@y.com');
    expect(m.unmask('[EMAIL_9] [EMAIL_1]')).toBe('[EMAIL_9] x@y.com');
  });

  it('masks long inputs in time linear in their length: runs that fail late are bounded, not tried from every start', () => {
    const m = new MaskSession();
    // Each of these took about a minute with an unbounded e-mail pattern (quadratic: 20 kB took 0.27 s, 300 kB 61 s).
    const letters = 'a'.repeat(300_000);
    const dotted = `x@${'a.'.repeat(150_000)}`;
    // A linear pass takes a few ms; the quadratic minute would end the test at its timeout (bench/ times such things).
    expect(m.mask(letters)).toBe(letters);
    expect(m.mask(dotted)).toBe(dotted);
    // A real address after a long run is still found (its local part at most 64 characters, as RFC 5321 allows).
    expect(m.mask(`${'b'.repeat(100)}@example.com`)).toBe(`${'b'.repeat(36)}[EMAIL_1]`);
  });
});
