"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.periodStart = periodStart;
const SHIFT_MS = 2 * 60 * 60 * 1000; // 22:00 UTC + 2 h = midnight
function periodStart(reset, now) {
    if (reset === 'never')
        return new Date(0);
    const shifted = new Date(now.getTime() + SHIFT_MS);
    const y = shifted.getUTCFullYear();
    const m = shifted.getUTCMonth();
    const d = shifted.getUTCDate();
    let start;
    if (reset === 'daily')
        start = Date.UTC(y, m, d);
    else if (reset === 'monthly')
        start = Date.UTC(y, m, 1);
    else {
        const weekday = (shifted.getUTCDay() + 6) % 7; // Monday = 0
        start = Date.UTC(y, m, d - weekday);
    }
    return new Date(start - SHIFT_MS);
}
