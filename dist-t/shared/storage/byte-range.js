"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.resolveRange = resolveRange;
/**
 * Reads one `Range: bytes=...` header against an object of `size` bytes (RFC 9110 section 14).
 * null: serve the whole object (no header, another unit, a malformed or multi-part range: a server may
 * ignore those); 'unsatisfiable': answer 416.
 */
function resolveRange(header, size) {
    if (!header)
        return null;
    const m = /^bytes=\s*(\d*)-(\d*)\s*$/i.exec(header.trim());
    if (!m || (m[1] === '' && m[2] === ''))
        return null;
    if (m[1] === '') {
        const suffix = Number(m[2]);
        if (suffix === 0 || size === 0)
            return 'unsatisfiable';
        return { start: Math.max(0, size - suffix), end: size - 1 };
    }
    const start = Number(m[1]);
    const end = m[2] === '' ? size - 1 : Number(m[2]);
    if (end < start && m[2] !== '')
        return null;
    if (start >= size)
        return 'unsatisfiable';
    return { start, end: Math.min(end, size - 1) };
}
