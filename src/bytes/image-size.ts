/**
 * The pixel size an image declares in its header, read before any compile
 * (docs/api.md, "Images and files"): a 34-byte GIF can declare 65535 × 65535
 * pixels, and a decoder allocates what the header says before it finds out
 * that the data is not there.
 *
 * The format is told by the first bytes, as Typst 0.14 does (and as a
 * template can ask for any format whatever the name): PNG (IHDR), JPEG (the
 * first SOF marker, walking the segments before it), GIF (the logical screen,
 * which the decoder allocates as its canvas, and the first frame, which it
 * allocates as the frame's buffer), WebP (VP8, VP8L, or the VP8X canvas).
 *
 * The bytes come from a reader that only moves forward (the asset's base64
 * decoded on the fly, see base64.ts), so reading a header costs at most one
 * pass over the asset, and nothing of it is copied. A header that is cut
 * short or makes no sense gives no size: Typst then says it cannot decode it.
 */

/** Bytes read one at a time, forward only. */
export interface ByteReader {
  /** The next byte, or -1 at the end. */
  next(): number;
  /** Passes over `count` bytes; false if the end came first. */
  skip(count: number): boolean;
}

export interface ImageSize {
  width: number;
  height: number;
}

/** A reader of the bytes `bytes[from, to)`. */
export class BytesReader implements ByteReader {
  private at: number;
  constructor(
    private readonly bytes: Uint8Array,
    from = 0,
    private readonly to = bytes.length,
  ) {
    this.at = from;
  }
  next(): number {
    return this.at < this.to ? this.bytes[this.at++]! : -1;
  }
  skip(count: number): boolean {
    this.at += count;
    return this.at <= this.to;
  }
}

/** The first bytes, enough to tell every format apart. */
const MAGIC_BYTES = 12;

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0));
const IHDR = ascii('IHDR');
const GIF = ascii('GIF');
const RIFF = ascii('RIFF');
const WEBP = ascii('WEBP');
const VP8 = ascii('VP8 ');
const VP8L = ascii('VP8L');
const VP8X = ascii('VP8X');

const startsWith = (head: number[], at: number, magic: number[]) => magic.every((b, i) => head[at + i] === b);

/** `count` more bytes, or null if the end comes first. */
function read(reader: ByteReader, count: number): number[] | null {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const b = reader.next();
    if (b < 0) return null;
    out.push(b);
  }
  return out;
}

const be16 = (b: number[], at: number) => (b[at]! << 8) | b[at + 1]!;
const le16 = (b: number[], at: number) => b[at]! | (b[at + 1]! << 8);
const le24 = (b: number[], at: number) => b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
/** Unsigned: a PNG side can be up to 2^32 - 1. */
const be32 = (b: number[], at: number) => b[at]! * 0x1000000 + ((b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!);

/**
 * The sizes the image in `reader` declares, largest first (a GIF declares
 * its canvas and its first frame), or an empty list when it is not a PNG,
 * JPEG, GIF or WebP, or its header is cut short or broken.
 */
export function declaredSizes(reader: ByteReader): ImageSize[] {
  const head: number[] = [reader.next(), reader.next()];
  if (head[0] === 0xff && head[1] === 0xd8) return jpegSize(reader);
  for (let i = 2; i < MAGIC_BYTES; i++) head.push(reader.next());
  let sizes: ImageSize[] = [];
  if (startsWith(head, 0, PNG)) sizes = pngSize(head, reader);
  else if (startsWith(head, 0, GIF)) sizes = gifSizes(head, reader);
  else if (startsWith(head, 0, RIFF) && startsWith(head, 8, WEBP)) sizes = webpSize(reader);
  return sizes.sort((a, b) => b.width * b.height - a.width * a.height);
}

/** The first declared size over `maxPixels`, or null. */
export function oversizedImage(reader: ByteReader, maxPixels: number): ImageSize | null {
  return declaredSizes(reader).find((size) => size.width * size.height > maxPixels) ?? null;
}

/** PNG: the signature, then the IHDR chunk (length, type, width, height). */
function pngSize(head: number[], reader: ByteReader): ImageSize[] {
  const rest = read(reader, 24 - MAGIC_BYTES);
  if (!rest) return [];
  const b = [...head, ...rest];
  if (!startsWith(b, 12, IHDR)) return [];
  return [{ width: be32(b, 16), height: be32(b, 20) }];
}

/**
 * JPEG: segments from SOI to the first SOFn (C0-CF but C4 DHT, C8 JPG, CC
 * DAC: baseline, extended, progressive, lossless, arithmetic), each passed
 * over by its length. As the decoders do, bytes between segments that are
 * not a marker are passed over, and a marker may be preceded by fill bytes
 * (0xFF). A scan (SOS) or the end (EOI) before any SOF: no size.
 */
function jpegSize(reader: ByteReader): ImageSize[] {
  const next = () => reader.next();
  for (;;) {
    let b = next();
    if (b < 0) return [];
    if (b !== 0xff) continue;
    do b = next();
    while (b === 0xff);
    if (b < 0) return [];
    if (b === 0x00 || b === 0x01 || (b >= 0xd0 && b <= 0xd8)) continue; // stuffed byte, TEM, RSTn, SOI: no length
    if (b === 0xd9 || b === 0xda) return [];
    const lengthBytes = [next(), next()];
    if (lengthBytes[1]! < 0) return [];
    const length = be16(lengthBytes, 0);
    if (length < 2) return [];
    if (b >= 0xc0 && b <= 0xcf && b !== 0xc4 && b !== 0xc8 && b !== 0xcc) {
      const frame = [next(), next(), next(), next(), next()];
      if (frame[4]! < 0) return [];
      return [{ width: be16(frame, 3), height: be16(frame, 1) }];
    }
    if (!reader.skip(length - 2)) return [];
  }
}

/**
 * GIF: the logical screen (6: width, height, flags), its colour table, then
 * extension blocks (each a chain of sub-blocks) up to the first image
 * descriptor (0x2C: left, top, width, height).
 */
function gifSizes(head: number[], reader: ByteReader): ImageSize[] {
  const rest = read(reader, 13 - MAGIC_BYTES);
  if (!rest) return [];
  const b = [...head, ...rest];
  const sizes = [{ width: le16(b, 6), height: le16(b, 8) }];
  const flags = b[10]!;
  if (flags & 0x80 && !reader.skip(3 * 2 ** ((flags & 7) + 1))) return sizes;
  for (;;) {
    const block = reader.next();
    if (block === 0x2c) {
      const descriptor = read(reader, 8);
      if (descriptor) sizes.push({ width: le16(descriptor, 4), height: le16(descriptor, 6) });
      return sizes;
    }
    if (block !== 0x21 || reader.next() < 0) return sizes; // the trailer, the end, or not a GIF block
    for (;;) {
      const length = reader.next();
      if (length <= 0) break;
      if (!reader.skip(length)) return sizes;
    }
  }
}

/** WebP: RIFF, size, WEBP, then the first chunk: VP8 (a key frame), VP8L or VP8X. */
function webpSize(reader: ByteReader): ImageSize[] {
  const b = read(reader, 30 - MAGIC_BYTES);
  if (!b) return [];
  // Offsets below count from byte 12 of the file.
  if (startsWith(b, 0, VP8)) {
    // Frame tag (3 bytes, bit 0 clear on a key frame), start code 9D 01 2A, then 14-bit width and height.
    if (b[8]! & 1 || b[11] !== 0x9d || b[12] !== 0x01 || b[13] !== 0x2a) return [];
    return [{ width: le16(b, 14) & 0x3fff, height: le16(b, 16) & 0x3fff }];
  }
  if (startsWith(b, 0, VP8L)) {
    if (b[8] !== 0x2f) return [];
    const bits = b[9]! | (b[10]! << 8) | (b[11]! << 16) | (b[12]! << 24);
    return [{ width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }];
  }
  if (startsWith(b, 0, VP8X)) return [{ width: le24(b, 12) + 1, height: le24(b, 15) + 1 }];
  return [];
}
