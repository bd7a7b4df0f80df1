"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ZERO = exports.Decimal = void 0;
exports.money = money;
exports.moneyString = moneyString;
exports.moneyNumber = moneyNumber;
exports.toStorage = toStorage;
exports.parseMoney = parseMoney;
exports.compareMoney = compareMoney;
const client_runtime_utils_1 = require("@prisma/client-runtime-utils");
Object.defineProperty(exports, "Decimal", { enumerable: true, get: function () { return client_runtime_utils_1.Decimal; } });
exports.ZERO = new client_runtime_utils_1.Decimal(0);
function money(value) {
    return value === null || value === undefined ? exports.ZERO : new client_runtime_utils_1.Decimal(value);
}
/** Decimal string with exactly 6 places, as replies show money (decisions.md section 4). */
function moneyString(value) {
    return money(value).toDecimalPlaces(6, client_runtime_utils_1.Decimal.ROUND_HALF_UP).toFixed(6);
}
/** JSON number rounded to 6 places. */
function moneyNumber(value) {
    return Number(money(value).toDecimalPlaces(6, client_runtime_utils_1.Decimal.ROUND_HALF_UP).toFixed(6));
}
/** Amounts are kept to 10 decimal places in the database. */
function toStorage(value) {
    return money(value).toDecimalPlaces(10, client_runtime_utils_1.Decimal.ROUND_HALF_UP).toFixed(10);
}
/** Plain decimal text: digits, an optional fraction and exponent (what `String(number)` and price strings look like). */
const DECIMAL_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE]([+-]?\d+))?$/;
const MAX_EXPONENT = 1000;
/** A decimal from caller or catalog input, or undefined when it is not a finite decimal number. */
function parseMoney(value) {
    if (typeof value === 'number')
        return Number.isFinite(value) ? new client_runtime_utils_1.Decimal(value) : undefined;
    if (typeof value !== 'string')
        return undefined;
    const m = DECIMAL_TEXT.exec(value.trim());
    if (!m || (m[1] !== undefined && Math.abs(Number(m[1])) > MAX_EXPONENT))
        return undefined;
    return new client_runtime_utils_1.Decimal(value.trim());
}
/** -1, 0 or 1 as a is below, equal to or above b, exactly (no float arithmetic). */
function compareMoney(a, b) {
    const d = (v) => (typeof v === 'string' ? new client_runtime_utils_1.Decimal(v.trim()) : money(v));
    return d(a).cmp(d(b));
}
