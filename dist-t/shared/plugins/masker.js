"use strict";
/**
 * The `masker` plugin (decisions.md section 6): personal data in the input — e-mail addresses, phone numbers,
 * card numbers, IBANs, IPv4 addresses — is replaced by placeholders such as `[EMAIL_1]` before the provider
 * sees it, and the placeholders in the answer are turned back into the originals. Pure: no I/O.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.MaskSession = void 0;
/** Most specific first: a card number must not be taken for a phone number. */
const PATTERNS = [
    { kind: 'EMAIL', re: /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g },
    { kind: 'CARD', re: /\b(?:\d[ -]?){12,18}\d\b/g, valid: luhn },
    { kind: 'IBAN', re: /\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b/g },
    { kind: 'PHONE', re: /(?<![\w+])\+?\d[\d\s().-]{8,}\d(?!\w)/g, valid: (s) => s.replace(/\D/g, '').length >= 10 && s.replace(/\D/g, '').length <= 15 },
    { kind: 'IP', re: /\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b/g },
];
function luhn(s) {
    const digits = s.replace(/\D/g, '');
    if (digits.length < 13 || digits.length > 19)
        return false;
    let sum = 0;
    for (let i = 0; i < digits.length; i++) {
        let d = Number(digits[digits.length - 1 - i]);
        if (i % 2 === 1) {
            d *= 2;
            if (d > 9)
                d -= 9;
        }
        sum += d;
    }
    return sum % 10 === 0;
}
const PLACEHOLDER = /\[(EMAIL|CARD|IBAN|PHONE|IP)_(\d+)\]/g;
/** The placeholders of one request and what they stand for. */
class MaskSession {
    byValue = new Map();
    byPlaceholder = new Map();
    counters = new Map();
    get size() {
        return this.byPlaceholder.size;
    }
    mask(text) {
        let out = text;
        for (const { kind, re, valid } of PATTERNS) {
            out = out.replace(re, (match) => {
                if (PLACEHOLDER.test(match))
                    return match;
                PLACEHOLDER.lastIndex = 0;
                if (valid && !valid(match))
                    return match;
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
    unmask(text) {
        if (!this.size)
            return text;
        return text.replace(PLACEHOLDER, (ph) => this.byPlaceholder.get(ph) ?? ph);
    }
    /** Unmasks a stream of deltas: text that may still be the start of a placeholder is held back. */
    streamUnmasker() {
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
exports.MaskSession = MaskSession;
