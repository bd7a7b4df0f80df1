"use strict";
/**
 * The playing time of a stored media file, read from its own headers: the last source of a video's or an
 * audio's `duration_seconds` when neither the provider nor the request gives one (issue 9 item 11). Pure: no
 * I/O. Knows ISO BMFF (MP4, MOV, M4A: `moov/mvhd`), WAV (`fmt ` and `data` chunks) and MP3 (a Xing/Info
 * frame count, else the first frame's constant bit rate). Anything else, or a damaged file: undefined.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.mediaFileDuration = mediaFileDuration;
/** Seconds rounded to milliseconds; undefined unless finite and positive. */
function seconds(value) {
    return Number.isFinite(value) && value > 0 ? Math.round(value * 1000) / 1000 : undefined;
}
/** Walks the boxes in `[start, end)`; calls `visit(type, payloadStart, payloadEnd)` until it returns a value. */
function boxes(b, start, end, visit) {
    let at = start;
    while (at + 8 <= end) {
        let size = b.readUInt32BE(at);
        const type = b.toString('latin1', at + 4, at + 8);
        let header = 8;
        if (size === 1) {
            if (at + 16 > end)
                return undefined;
            const big = b.readBigUInt64BE(at + 8);
            if (big > BigInt(end - at))
                return undefined;
            size = Number(big);
            header = 16;
        }
        else if (size === 0)
            size = end - at;
        if (size < header || at + size > end)
            return undefined;
        const found = visit(type, at + header, at + size);
        if (found !== undefined)
            return found;
        at += size;
    }
    return undefined;
}
/** ISO BMFF: `moov` → `mvhd` → duration / timescale. */
function isoDuration(b) {
    return boxes(b, 0, b.length, (type, from, to) => {
        if (type !== 'moov')
            return undefined;
        return boxes(b, from, to, (inner, p, q) => {
            if (inner !== 'mvhd' || q - p < 20)
                return undefined;
            const version = b.readUInt8(p);
            if (version === 1) {
                if (q - p < 32)
                    return undefined;
                return seconds(Number(b.readBigUInt64BE(p + 24)) / b.readUInt32BE(p + 20));
            }
            return seconds(b.readUInt32BE(p + 16) / b.readUInt32BE(p + 12));
        });
    });
}
/** WAV: the `data` chunk's size over the `fmt ` chunk's byte rate. */
function wavDuration(b) {
    if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE')
        return undefined;
    let byteRate;
    let at = 12;
    while (at + 8 <= b.length) {
        const id = b.toString('latin1', at, at + 4);
        const size = b.readUInt32LE(at + 4);
        if (id === 'fmt ' && at + 20 <= b.length)
            byteRate = b.readUInt32LE(at + 16);
        if (id === 'data')
            return byteRate ? seconds(Math.min(size, b.length - at - 8) / byteRate) : undefined;
        at += 8 + size + (size % 2);
    }
    return undefined;
}
const MP3_BITRATES = {
    // kbit/s by index 1..14: MPEG-1 Layer III, and MPEG-2/2.5 Layer III
    '1': [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
    '2': [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const MP3_RATES = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] };
/** MP3 (Layer III): frames × samples per frame / rate from a Xing/Info header, else bytes × 8 / bit rate. */
function mp3Duration(b) {
    let at = 0;
    if (b.length >= 10 && b.toString('latin1', 0, 3) === 'ID3') {
        at = 10 + (((b[6] & 0x7f) << 21) | ((b[7] & 0x7f) << 14) | ((b[8] & 0x7f) << 7) | (b[9] & 0x7f));
    }
    while (at + 4 <= b.length && !(b[at] === 0xff && (b[at + 1] & 0xe0) === 0xe0))
        at++;
    if (at + 4 > b.length)
        return undefined;
    const version = (b[at + 1] >> 3) & 0x03; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
    const layer = (b[at + 1] >> 1) & 0x03; // 1: Layer III
    const bitrateIndex = (b[at + 2] >> 4) & 0x0f;
    const rateIndex = (b[at + 2] >> 2) & 0x03;
    if (version === 1 || layer !== 1 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3)
        return undefined;
    const rate = MP3_RATES[version][rateIndex];
    const kbps = MP3_BITRATES[version === 3 ? '1' : '2'][bitrateIndex - 1];
    const samplesPerFrame = version === 3 ? 1152 : 576;
    const mono = ((b[at + 3] >> 6) & 0x03) === 3;
    const side = version === 3 ? (mono ? 17 : 32) : mono ? 9 : 17;
    const tag = at + 4 + side;
    if (tag + 12 <= b.length) {
        const name = b.toString('latin1', tag, tag + 4);
        if ((name === 'Xing' || name === 'Info') && b.readUInt32BE(tag + 4) & 0x1)
            return seconds((b.readUInt32BE(tag + 8) * samplesPerFrame) / rate);
    }
    return seconds(((b.length - at) * 8) / (kbps * 1000));
}
/** Duration in seconds of a video or audio file, or undefined when its format is unknown or its headers do not say. */
function mediaFileDuration(bytes, mimeType) {
    const mime = mimeType.toLowerCase();
    try {
        if (mime === 'audio/wav' || mime === 'audio/x-wav' || mime === 'audio/wave')
            return wavDuration(bytes);
        if (mime === 'audio/mpeg' || mime === 'audio/mp3')
            return mp3Duration(bytes);
        if (mime.startsWith('video/') || mime === 'audio/mp4' || mime === 'audio/aac' || mime === 'audio/x-m4a')
            return isoDuration(bytes);
    }
    catch {
        // A header cut short: no duration.
    }
    return undefined;
}
