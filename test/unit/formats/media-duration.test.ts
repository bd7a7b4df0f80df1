import { mediaFileDuration } from '../../../shared/formats/media-duration';
import { MEDIA, MP4_FILE_SECONDS } from '../../../fakes/synth';

function box(type: string, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + payload.length, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, payload]);
}

describe('mediaFileDuration', () => {
  it('reads an MP4 movie header (version 0), wherever moov is', () => {
    expect(mediaFileDuration(MEDIA.mp4.bytes, 'video/mp4')).toBe(MP4_FILE_SECONDS);
    expect(mediaFileDuration(MEDIA.mp4.bytes, 'video/quicktime')).toBe(MP4_FILE_SECONDS);
  });

  it('reads a version 1 mvhd (64-bit duration) with a fractional length', () => {
    const p = Buffer.alloc(112);
    p.writeUInt8(1, 0);
    p.writeUInt32BE(90_000, 20);
    p.writeBigUInt64BE(BigInt(90_000 * 12.5), 24);
    const file = Buffer.concat([box('ftyp', Buffer.from('isom\0\0\0\0', 'latin1')), box('moov', box('mvhd', p))]);
    expect(mediaFileDuration(file, 'video/mp4')).toBe(12.5);
  });

  it('reads a WAV from its byte rate and data size', () => {
    expect(mediaFileDuration(MEDIA.wav.bytes, 'audio/wav')).toBe(0.1);
  });

  it('reads an MP3 by its constant bit rate, after an ID3 tag', () => {
    // three 417-byte frames at 128 kbit/s
    expect(mediaFileDuration(MEDIA.mp3.bytes, 'audio/mpeg')).toBe(Math.round(((3 * 417 * 8) / 128_000) * 1000) / 1000);
  });

  it('answers undefined for what it cannot read, never throws', () => {
    expect(mediaFileDuration(Buffer.alloc(0), 'video/mp4')).toBeUndefined();
    expect(mediaFileDuration(Buffer.from('not a movie at all'), 'video/mp4')).toBeUndefined();
    expect(mediaFileDuration(MEDIA.mp4.bytes.subarray(0, MEDIA.mp4.bytes.length - 10), 'video/mp4')).toBeUndefined();
    expect(mediaFileDuration(MEDIA.png.bytes, 'image/png')).toBeUndefined();
    expect(mediaFileDuration(Buffer.from([0xff, 0xff, 0xff, 0xff]), 'audio/mpeg')).toBeUndefined();
    const huge = Buffer.alloc(16);
    huge.writeUInt32BE(1, 0);
    huge.write('moov', 4, 'latin1');
    huge.writeBigUInt64BE(2n ** 62n, 8);
    expect(mediaFileDuration(huge, 'video/mp4')).toBeUndefined();
  });
});
