/**
 * The `masker` plugin (decisions.md section 6): personal data in the input — e-mail addresses, phone numbers,
 * card numbers, IBANs, IPv4 addresses — is replaced by placeholders such as `[EMAIL_1]` before the provider
 * sees it, and the placeholders in the answer are turned back into the originals. Pure: no I/O.
 */

/**
 * Most specific first: a card number must not be taken for a phone number. Every open-ended run is bounded (an
 * address's local part by 64 characters, its domain by 253, a phone number's by 24): an unbounded run that fails
 * late is tried again from every start, so a long input without an `@` took time quadratic in its length (300 kB
 * without one held the worker for about a minute).
 */
const PATTERNS: Array<{ kind: string; re: RegExp; valid?: (s: string) => boolean }> = [
  { kind: 'EMAIL', re: /[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,253}\.[A-Za-z]{2,24}/g },
  { kind: 'CARD', re: /\b(?:\d[ -]?){12,18}\d\b/g, valid: luhn },
  { kind: 'IBAN', re: /\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b/g },
  { kind: 'PHONE', re: /(?<![\w+])\+?\d[\d\s().-]{8,24}\d(?!\w)/g, valid: (s) => s.replace(/\D/g, '').length >= 10 && s.replace(/\D/g, '').length <= 15 },
  { kind: 'IP', re: /\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b/g },
];

function luhn(s: string): boolean {
  const digits = s.replace(/\D/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

const PLACEHOLDER = /\[(EMAIL|CARD|IBAN|PHONE|IP)_(\d+)\]/g;

/** The placeholders of one request and what they stand for. */
export class MaskSession {
  private readonly byValue = new Map<string, string>();
  private readonly byPlaceholder = new Map<string, string>();
  private readonly counters = new Map<string, number>();

  get size(): number {
    return this.byPlaceholder.size;
  }

  mask(text: string): string {
    let out = text;
    for (const { kind, re, valid } of PATTERNS) {
      out = out.replace(re, (match) => {
        if (PLACEHOLDER.test(match)) return match;
        PLACEHOLDER.lastIndex = 0;
        if (valid && !valid(match)) return match;
        let ph = this.byValue.get(match);
        if (!ph) {
          const n = (this.counters.get(kind) ?? 0) + 1;
          this.counters.set(kind, n);
          ph = `[${kind}_${n}]`;
          this.byValue.set(match, ph);
          this.byPlaceholder.set(ph, match);
        }
        return ph;
      });
    }
    return out;
  }

  unmask(text: string): string {
    if (!this.size) return text;
    return text.replace(PLACEHOLDER, (ph) => this.byPlaceholder.get(ph) ?? ph);
  }

  /** Unmasks a stream of deltas: text that may still be the start of a placeholder is held back. */
  streamUnmasker(): { push(delta: string): string; flush(): string } {
    let held = '';
    return {
      push: (delta) => {
        const text = held + delta;
        const open = text.lastIndexOf('[');
        // Hold from the last '[' only while it could still grow into a placeholder (`[EMAIL_12]` is short).
        if (open >= 0 && !text.includes(']', open) && text.length - open <= 12) {
          held = text.slice(open);
          return this.unmask(text.slice(0, open));
        }
        held = '';
        return this.unmask(text);
      },
      flush: () => {
        const rest = this.unmask(held);
        held = '';
        return rest;
      },
    };
  }
}
