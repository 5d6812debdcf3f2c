/**
 * Image headers (src/bytes/image-size.ts), read before any compile: the size
 * of real and hand-made PNG, JPEG, GIF and WebP files; and, with fast-check,
 * that on any bytes (random, truncated, with bogus or huge lengths) the
 * reader never throws, never reads past the end, reads each byte at most
 * once, and gives the same answer from base64 (Base64Reader, any
 * whitespace) as from the bytes themselves.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Base64Reader } from '../src/bytes/base64.js';
import { errorBody } from '../src/bytes/error-body.js';
import { BytesReader, type ByteReader, declaredSizes, oversizedImage } from '../src/bytes/image-size.js';
import { checkBody } from '../src/bytes/json-check.js';
import { solidPng } from './support/png.js';
import { runs } from './support/fuzz-scale.js';

const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/${name}`, import.meta.url));
const sizes = (bytes: Uint8Array) => declaredSizes(new BytesReader(bytes));

const u16be = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u16le = (n: number) => [n & 0xff, (n >> 8) & 0xff];
const u24le = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff];
const u32be = (n: number) => [(n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0));

function png(width: number, height: number): Buffer {
  return Buffer.from([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    0,
    0,
    0,
    13,
    ...ascii('IHDR'),
    ...u32be(width),
    ...u32be(height),
    8,
    0,
    0,
    0,
    0,
  ]);
}

/** A GIF: logical screen, optional global colour table, a comment, then one frame. */
function gif(screen: [number, number], frame: [number, number], table = 0): Buffer {
  const flags = table > 0 ? 0x80 | (table - 1) : 0;
  return Buffer.from([
    ...ascii('GIF89a'),
    ...u16le(screen[0]),
    ...u16le(screen[1]),
    flags,
    0,
    0,
    ...new Array(table > 0 ? 3 * 2 ** table : 0).fill(7),
    0x21,
    0xfe,
    3,
    ...ascii('abc'),
    0,
    0x2c,
    0,
    0,
    0,
    0,
    ...u16le(frame[0]),
    ...u16le(frame[1]),
    0,
    2,
    2,
    0x4c,
    0x01,
    0,
    0x3b,
  ]);
}

/** A JPEG: SOI, APP0 of `app` bytes, a DQT-like segment, garbage and fill bytes, then SOF`n`. */
function jpeg(width: number, height: number, sof = 0xc0, app = 16): Buffer {
  return Buffer.from([
    0xff,
    0xd8,
    0xff,
    0xe0,
    ...u16be(app + 2),
    ...new Array(app).fill(0xff),
    0xff,
    0xdb,
    ...u16be(4),
    1,
    2,
    0x12,
    0x34,
    0xff,
    0xff,
    sof,
    ...u16be(11),
    8,
    ...u16be(height),
    ...u16be(width),
    1,
    1,
    0x11,
    0,
    0xff,
    0xd9,
  ]);
}

function webp(chunk: 'VP8 ' | 'VP8L' | 'VP8X', width: number, height: number): Buffer {
  const data =
    chunk === 'VP8 '
      ? [0x50, 0x01, 0x00, 0x9d, 0x01, 0x2a, ...u16le(width), ...u16le(height), 0, 0]
      : chunk === 'VP8L'
        ? (() => {
            const bits = (width - 1) | ((height - 1) << 14);
            return [0x2f, bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, (bits >>> 24) & 0xff, 0, 0, 0, 0, 0];
          })()
        : [0x10, 0, 0, 0, ...u24le(width - 1), ...u24le(height - 1)];
  return Buffer.from([...ascii('RIFF'), ...u32be(0), ...ascii('WEBP'), ...ascii(chunk), ...u32be(data.length).reverse(), ...data]);
}

/** Counts what a reader of `length` bytes is asked for: the bytes it hands out or passes over, and the calls. */
class Counting implements ByteReader {
  consumed = 0;
  calls = 0;
  constructor(
    private readonly inner: ByteReader,
    private readonly length: number,
  ) {}
  next(): number {
    this.calls++;
    const b = this.inner.next();
    if (b >= 0) this.consumed++;
    return b;
  }
  skip(count: number): boolean {
    this.calls++;
    this.consumed = Math.min(this.length, this.consumed + count);
    return this.inner.skip(count);
  }
}

describe('image headers: sizes of real and hand-made images', () => {
  it('reads the fixtures and a PNG made by the tests', () => {
    assert.deepEqual(sizes(fixture('photo.jpg')), [{ width: 37, height: 23 }]);
    assert.deepEqual(sizes(fixture('seal.gif')), [
      { width: 29, height: 17 },
      { width: 29, height: 17 },
    ]);
    assert.deepEqual(sizes(solidPng(40, 30, [1, 2, 3])), [{ width: 40, height: 30 }]);
  });

  it('reads the smallest WebP files of each kind (lossy, lossless, extended)', () => {
    for (const text of [
      'UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA',
      'UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==',
      'UklGRkoAAABXRUJQVlA4WAoAAAAQAAAAAAAAAAAAQUxQSAwAAAARBxAR/Q9ERP8DAABWUDggGAAAABQBAJ0BKgEAAQAAAP4AAA3AAP7mtQAAAA==',
    ]) {
      assert.deepEqual(sizes(Buffer.from(text, 'base64')), [{ width: 1, height: 1 }], text);
    }
  });

  it('reads a GIF of under 40 bytes that declares 65535 × 65535, and a 30000² PNG header', () => {
    const bomb = gif([65535, 65535], [65535, 65535]);
    assert.ok(bomb.length <= 40);
    assert.deepEqual(oversizedImage(new BytesReader(bomb), 100e6), { width: 65535, height: 65535 });
    assert.deepEqual(oversizedImage(new BytesReader(png(30000, 30000)), 100e6), { width: 30000, height: 30000 });
    assert.equal(oversizedImage(new BytesReader(png(10000, 10000)), 100e6), null, 'exactly the limit is allowed');
    assert.deepEqual(oversizedImage(new BytesReader(png(10000, 10001)), 100e6), { width: 10000, height: 10001 });
  });

  it('counts a GIF frame larger than its canvas, and the canvas larger than its frame', () => {
    assert.deepEqual(oversizedImage(new BytesReader(gif([1, 1], [20000, 20000], 3)), 100e6), { width: 20000, height: 20000 });
    assert.deepEqual(oversizedImage(new BytesReader(gif([20000, 20000], [1, 1])), 100e6), { width: 20000, height: 20000 });
  });

  it('finds the SOF of every kind after other segments, garbage and fill bytes', () => {
    for (const sof of [0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]) {
      assert.deepEqual(sizes(jpeg(12345, 54321, sof)), [{ width: 12345, height: 54321 }], sof.toString(16));
    }
    // DHT, JPG and DAC are not frames: the walk goes on to the SOF0 after them.
    for (const notFrame of [0xc4, 0xc8, 0xcc]) {
      const bytes = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, notFrame, 0, 3, 9]), jpeg(7, 8).subarray(2)]);
      assert.deepEqual(sizes(bytes), [{ width: 7, height: 8 }]);
    }
  });

  it('reads WebP VP8, VP8L and VP8X headers at their limits', () => {
    assert.deepEqual(sizes(webp('VP8 ', 16383, 16383)), [{ width: 16383, height: 16383 }]);
    assert.deepEqual(sizes(webp('VP8L', 16384, 16384)), [{ width: 16384, height: 16384 }]);
    assert.deepEqual(sizes(webp('VP8X', 2 ** 24, 2 ** 24)), [{ width: 2 ** 24, height: 2 ** 24 }]);
  });

  it('tells the format by its first bytes only: text, SVG and empty files have no size', () => {
    for (const bytes of ['', 'GIF', 'hello, world', '<svg xmlns="http://www.w3.org/2000/svg"/>', 'RIFF\0\0\0\0WAVE']) {
      assert.deepEqual(sizes(Buffer.from(bytes)), [], bytes);
    }
  });
});

describe('image headers on hostile bytes', () => {
  const headers = fc.oneof(
    fc.tuple(fc.nat(2 ** 32 - 1), fc.nat(2 ** 32 - 1)).map(([w, h]) => png(w, h)),
    fc.tuple(fc.nat(65535), fc.nat(65535), fc.nat(65535), fc.nat(65535), fc.nat(8)).map(([a, b, c, d, t]) => gif([a, b], [c, d], t)),
    fc.tuple(fc.nat(65535), fc.nat(65535), fc.constantFrom(0xc0, 0xc2, 0xcf), fc.nat(300)).map(([w, h, s, app]) => jpeg(w, h, s, app)),
    fc
      .tuple(
        fc.constantFrom('VP8 ' as const, 'VP8L' as const, 'VP8X' as const),
        fc.integer({ min: 1, max: 16383 }),
        fc.integer({ min: 1, max: 16383 }),
      )
      .map(([kind, w, h]) => webp(kind, w, h)),
  );
  /** A header cut, with bytes changed, lengths made huge or zero, or random bytes after a magic. */
  const hostile = fc.oneof(
    fc.uint8Array({ maxLength: 200 }),
    fc
      .tuple(fc.constantFrom(png(1, 1), gif([1, 1], [1, 1], 2), jpeg(1, 1), webp('VP8X', 1, 1)), fc.uint8Array({ maxLength: 120 }))
      .map(([h, tail]) => Buffer.concat([h.subarray(0, 12), tail])),
    fc.tuple(headers, fc.nat(), fc.nat(), fc.integer({ min: 0, max: 255 })).map(([h, cut, at, byte]) => {
      const changed = Buffer.from(h);
      changed[at % changed.length] = byte;
      return changed.subarray(0, cut % (changed.length + 1));
    }),
    fc
      .tuple(fc.nat(300), fc.constantFrom(0x0000, 0x0001, 0x0002, 0xffff))
      .map(([count, length]) => Buffer.from([0xff, 0xd8, ...Array.from({ length: count }, () => [0xff, 0xe1, ...u16be(length)]).flat()])),
  );

  it(`gives the declared size of generated headers (${runs(1000)} cases)`, () => {
    fc.assert(
      fc.property(headers, (bytes) => {
        const found = sizes(bytes);
        assert.ok(found.length >= 1);
        for (const { width, height } of found) assert.ok(Number.isInteger(width) && Number.isInteger(height) && width >= 0 && height >= 0);
      }),
      { numRuns: runs(1000) },
    );
  });

  it(`never throws, reads each byte at most once, and says the same from base64 with whitespace (${runs(3000)} cases)`, () => {
    fc.assert(
      fc.property(fc.oneof(headers, hostile), fc.array(fc.nat(), { maxLength: 6 }), (bytes, spaces) => {
        const counting = new Counting(new BytesReader(bytes), bytes.length);
        const direct = declaredSizes(counting);
        // Forward only, so each byte once; calls bounded by the length (a 2-byte JPEG segment is four reads and an empty skip).
        assert.ok(counting.consumed <= bytes.length, `${counting.consumed} of ${bytes.length}`);
        assert.ok(counting.calls <= 2 * bytes.length + 16, `${counting.calls} calls for ${bytes.length} bytes`);
        const text = Buffer.from(bytes).toString('base64').split('');
        for (const at of spaces) text.splice(at % (text.length + 1), 0, ' \n\t\r'[at % 4]!);
        const encoded = Buffer.from(text.join(''));
        assert.deepEqual(declaredSizes(new Base64Reader(encoded, 0, encoded.length)), direct);
      }),
      { numRuns: runs(3000) },
    );
  });

  it(`a Base64Reader hands out the bytes Buffer.from decodes, in any mix of next and skip (${runs(1000)} cases)`, () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), fc.array(fc.nat(40), { maxLength: 30 }), fc.boolean(), (bytes, steps, unpadded) => {
        let text = Buffer.from(bytes).toString('base64');
        if (unpadded) text = text.replace(/=+$/, '');
        const reader = new Base64Reader(Buffer.from(text), 0, text.length);
        let at = 0;
        for (const step of steps) {
          if (step % 3 === 0) {
            assert.equal(reader.next(), at < bytes.length ? bytes[at] : -1);
            at++;
          } else {
            assert.equal(reader.skip(step), at + step <= bytes.length);
            at += step;
          }
          if (at > bytes.length) break;
        }
      }),
      { numRuns: runs(1000) },
    );
  });

  it('walks a JPEG of a million tiny segments in one pass', () => {
    const count = 1_000_000;
    const bytes = Buffer.alloc(2 + count * 4 + 13);
    bytes.set([0xff, 0xd8]);
    for (let i = 0; i < count; i++) bytes.set([0xff, 0xe0, 0, 2], 2 + i * 4);
    bytes.set([0xff, 0xc2, 0, 11, 8, ...u16be(70000 % 65536), ...u16be(50000), 1, 1], 2 + count * 4);
    const counting = new Counting(new BytesReader(bytes), bytes.length);
    assert.deepEqual(declaredSizes(counting), [{ width: 50000, height: 70000 % 65536 }]);
    assert.ok(counting.calls <= 2 * bytes.length);
  });
});

describe('the body check refuses an image asset over the limit, naming it as sent', () => {
  const answer = (assets: string, maxImagePixels: number) => {
    const body = Buffer.from(`{"data":{},"template":"","assets":{${assets}}}`);
    const check = checkBody(body, { maxImagePixels });
    return check.ok ? 'ok' : errorBody(body, check.error).toString();
  };

  it('with the limit given, an escaped name, a data: URL and base64 with whitespace', () => {
    const value = png(300, 200).toString('base64');
    const spaced = value.replace(/(.{5})/g, '$1\\n ');
    assert.equal(answer(`"a.png":"${value}"`, 60_000), 'ok');
    assert.equal(
      answer(`"img\\/a.png":"data:image/png;base64,${spaced}"`, 59_999),
      '{"error":"Asset \\"img\\/a.png\\" is an image of 300 × 200 pixels, over the 0.059999 megapixel limit"}',
    );
    assert.equal(
      answer(`"b.bin":"${gif([9000, 9000], [1, 1]).toString('base64')}"`, 2_500_000),
      '{"error":"Asset \\"b.bin\\" is an image of 9000 × 9000 pixels, over the 2.5 megapixel limit"}',
    );
  });

  it('a bad name anywhere is named first; values and image sizes in the order of the assets', () => {
    const bomb = gif([65535, 65535], [1, 1]).toString('base64');
    assert.match(answer(`"big.gif":"${bomb}","../x":"AAAA"`, 100e6), /name must not have a/);
    assert.match(answer(`"big.gif":"${bomb}","a":"A*AA"`, 100e6), /big\.gif\\" is an image of 65535 × 65535 pixels/);
  });
});
