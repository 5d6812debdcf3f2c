// Removes the soft hyphen (U+00AD) from a font's character map when it shares
// its glyph with the hyphen-minus (U+002D), as in Arimo, Tinos and Cousine.
//
// Why: Typst 0.11's PDF writer builds each font's glyph -> text table
// (ToUnicode) from the font's cmap, and when two code points map to one glyph
// the later one wins. In these fonts every "-" would then be written to the
// PDF's text layer as U+00AD, which text extraction, search, copy-paste and
// screen readers read as a soft hyphen (pdf.js drops it). Without the U+00AD
// entry the glyph maps back to U+002D. Rendering does not need the entry:
// the soft hyphen is a default-ignorable character that is never drawn, and
// a hyphenation break draws the "-" glyph.
//
// Only the cmap table is rebuilt; formats 4 and 12 are decoded to a
// code point -> glyph map and encoded again without U+00AD, other subtable
// formats are copied as they are. Every other table stays byte for byte.
//
// Reference: OpenType spec, "cmap — Character to Glyph Index Mapping Table".

import { findTable } from '../../src/render/fonts/sfnt-tables.js';
import { replaceTables } from './sfnt-rebuild.js';

const HYPHEN_MINUS = 0x2d;
const SOFT_HYPHEN = 0xad;
const CMAP_HEADER_SIZE = 4;
const ENCODING_RECORD_SIZE = 8;

/** Code point -> glyph id; glyph 0 (.notdef) entries are never stored. */
export type CodepointMap = Map<number, number>;

interface EncodingRecord {
  platformId: number;
  encodingId: number;
  offset: number;
}

function readEncodingRecords(cmap: Buffer): EncodingRecord[] {
  const count = cmap.readUInt16BE(2);
  const records: EncodingRecord[] = [];
  for (let i = 0; i < count; i++) {
    const at = CMAP_HEADER_SIZE + i * ENCODING_RECORD_SIZE;
    records.push({
      platformId: cmap.readUInt16BE(at),
      encodingId: cmap.readUInt16BE(at + 2),
      offset: cmap.readUInt32BE(at + 4),
    });
  }
  return records;
}

/** Byte length of the subtable at `offset`, from its own header. */
function subtableLength(cmap: Buffer, offset: number): number {
  const format = cmap.readUInt16BE(offset);
  switch (format) {
    case 0:
    case 2:
    case 4:
    case 6:
      return cmap.readUInt16BE(offset + 2);
    case 8:
    case 10:
    case 12:
    case 13:
      return cmap.readUInt32BE(offset + 4);
    case 14:
      return cmap.readUInt32BE(offset + 2);
    default:
      throw new Error(`unknown cmap subtable format ${format}`);
  }
}

// ---- format 4: segment mapping to delta values (BMP) --------------------------

export function decodeFormat4(sub: Buffer): CodepointMap {
  const segCount = sub.readUInt16BE(6) / 2;
  const endAt = 14;
  const startAt = endAt + segCount * 2 + 2; // + reservedPad
  const deltaAt = startAt + segCount * 2;
  const rangeAt = deltaAt + segCount * 2;
  const map: CodepointMap = new Map();
  for (let i = 0; i < segCount; i++) {
    const end = sub.readUInt16BE(endAt + i * 2);
    const start = sub.readUInt16BE(startAt + i * 2);
    const delta = sub.readUInt16BE(deltaAt + i * 2);
    const rangeOffset = sub.readUInt16BE(rangeAt + i * 2);
    for (let c = start; c <= end && c !== 0xffff; c++) {
      let glyph: number;
      if (rangeOffset === 0) {
        glyph = (c + delta) & 0xffff;
      } else {
        const at = rangeAt + i * 2 + rangeOffset + (c - start) * 2;
        if (at + 2 > sub.length) continue; // malformed entry: treat as unmapped
        glyph = sub.readUInt16BE(at);
        if (glyph !== 0) glyph = (glyph + delta) & 0xffff;
      }
      if (glyph !== 0) map.set(c, glyph);
    }
  }
  return map;
}

interface Segment {
  start: number;
  end: number;
  /** Glyph ids when they do not follow the code points with one delta. */
  glyphs: Uint16Array | null;
  delta: number;
}

/** A constant-delta stretch at least this long gets a segment of its own. */
const MIN_DELTA_SEGMENT = 4;

/**
 * Encodes a BMP map as format 4. Within each run of consecutive code points,
 * stretches whose glyph ids run in step with the code points (one idDelta)
 * become delta segments and what lies between them goes through
 * glyphIdArray. Code points above U+FFFE are ignored: U+FFFF is reserved for
 * the closing segment. Written as flat loops over typed arrays: the build
 * runs it once per font, on maps of up to about 17,000 code points (the CJK
 * families).
 */
export function encodeFormat4(map: CodepointMap, language: number): Buffer {
  const codes = Uint32Array.from(map.keys())
    .filter((c) => c < 0xffff)
    .sort(); // typed arrays sort numerically
  const n = codes.length;
  const glyphs = new Uint16Array(n);
  for (let i = 0; i < n; i++) glyphs[i] = map.get(codes[i]!)!;

  const segments: Segment[] = [];
  let pending = -1; // first index waiting for a glyphIdArray segment
  const flush = (upTo: number): void => {
    if (pending < 0) return;
    segments.push({ start: codes[pending]!, end: codes[upTo - 1]!, glyphs: glyphs.slice(pending, upTo), delta: 0 });
    pending = -1;
  };
  for (let i = 0; i < n; ) {
    const delta = (glyphs[i]! - codes[i]!) & 0xffff;
    let m = i + 1;
    while (m < n && codes[m] === codes[m - 1]! + 1 && ((glyphs[m]! - codes[m]!) & 0xffff) === delta) m++;
    const runStarts = i === 0 || codes[i] !== codes[i - 1]! + 1;
    const runEnds = m === n || codes[m] !== codes[m - 1]! + 1;
    if (m - i >= MIN_DELTA_SEGMENT || (runStarts && runEnds)) {
      flush(i);
      segments.push({ start: codes[i]!, end: codes[m - 1]!, glyphs: null, delta });
    } else if (pending < 0) {
      pending = i;
    }
    if (runEnds) flush(m);
    i = m;
  }
  segments.push({ start: 0xffff, end: 0xffff, glyphs: null, delta: 1 });

  const segCount = segments.length;
  const arrayWords = segments.reduce((n, s) => n + (s.glyphs?.length ?? 0), 0);
  const length = 16 + segCount * 8 + arrayWords * 2;
  if (length > 0xffff) throw new Error('cmap format 4 subtable exceeds 64 KiB');
  const out = Buffer.alloc(length);
  const entrySelector = Math.floor(Math.log2(segCount));
  const searchRange = 2 * 2 ** entrySelector;
  out.writeUInt16BE(4, 0);
  out.writeUInt16BE(length, 2);
  out.writeUInt16BE(language, 4);
  out.writeUInt16BE(segCount * 2, 6);
  out.writeUInt16BE(searchRange, 8);
  out.writeUInt16BE(entrySelector, 10);
  out.writeUInt16BE(segCount * 2 - searchRange, 12);
  const endAt = 14;
  const startAt = endAt + segCount * 2 + 2;
  const deltaAt = startAt + segCount * 2;
  const rangeAt = deltaAt + segCount * 2;
  let arrayAt = rangeAt + segCount * 2;
  segments.forEach((s, i) => {
    out.writeUInt16BE(s.end, endAt + i * 2);
    out.writeUInt16BE(s.start, startAt + i * 2);
    out.writeUInt16BE(s.delta, deltaAt + i * 2);
    if (s.glyphs) {
      // idRangeOffset counts bytes from the idRangeOffset word itself.
      out.writeUInt16BE(arrayAt - (rangeAt + i * 2), rangeAt + i * 2);
      for (const g of s.glyphs) {
        out.writeUInt16BE(g, arrayAt);
        arrayAt += 2;
      }
    }
  });
  return out;
}

// ---- format 12: segmented coverage (full Unicode) -------------------------------

export function decodeFormat12(sub: Buffer): CodepointMap {
  const groups = sub.readUInt32BE(12);
  const map: CodepointMap = new Map();
  for (let i = 0; i < groups; i++) {
    const at = 16 + i * 12;
    const start = sub.readUInt32BE(at);
    const end = sub.readUInt32BE(at + 4);
    const glyph = sub.readUInt32BE(at + 8);
    for (let c = start; c <= end; c++) {
      const g = glyph + (c - start);
      if (g !== 0) map.set(c, g);
    }
  }
  return map;
}

export function encodeFormat12(map: CodepointMap, language: number): Buffer {
  const codes = [...map.keys()].sort((a, b) => a - b);
  const groups: [number, number, number][] = [];
  for (const c of codes) {
    const g = map.get(c)!;
    const last = groups[groups.length - 1];
    if (last && c === last[1] + 1 && g === last[2] + (c - last[0])) last[1] = c;
    else groups.push([c, c, g]);
  }
  const out = Buffer.alloc(16 + groups.length * 12);
  out.writeUInt16BE(12, 0);
  out.writeUInt32BE(out.length, 4);
  out.writeUInt32BE(language, 8);
  out.writeUInt32BE(groups.length, 12);
  groups.forEach(([start, end, glyph], i) => {
    out.writeUInt32BE(start, 16 + i * 12);
    out.writeUInt32BE(end, 20 + i * 12);
    out.writeUInt32BE(glyph, 24 + i * 12);
  });
  return out;
}

// ---- whole table ----------------------------------------------------------------

function decodeSubtable(sub: Buffer): CodepointMap | null {
  const format = sub.readUInt16BE(0);
  if (format === 4) return decodeFormat4(sub);
  if (format === 12) return decodeFormat12(sub);
  return null;
}

function subtableAt(cmap: Buffer, offset: number): Buffer {
  return cmap.subarray(offset, offset + subtableLength(cmap, offset));
}

/**
 * The font's Unicode map: its format 12 subtable if it has one, else its
 * format 4 subtable. Throws when it has neither.
 */
export function readUnicodeMap(font: Buffer): CodepointMap {
  const cmap = findTable(font, 'cmap');
  if (!cmap) throw new Error('font has no cmap table');
  const subtables = readEncodingRecords(cmap).map((r) => subtableAt(cmap, r.offset));
  const best = subtables.find((s) => s.readUInt16BE(0) === 12) ?? subtables.find((s) => s.readUInt16BE(0) === 4);
  if (!best) throw new Error('font has no format 4 or 12 cmap subtable');
  return decodeSubtable(best)!;
}

/** Glyph of one code point (0 if unmapped), without decoding the whole subtable. */
function lookup(sub: Buffer, code: number): number {
  const format = sub.readUInt16BE(0);
  if (format === 12) {
    for (let i = 0, groups = sub.readUInt32BE(12); i < groups; i++) {
      const at = 16 + i * 12;
      if (code >= sub.readUInt32BE(at) && code <= sub.readUInt32BE(at + 4)) {
        return sub.readUInt32BE(at + 8) + (code - sub.readUInt32BE(at));
      }
    }
    return 0;
  }
  if (format !== 4) return 0;
  const segCount = sub.readUInt16BE(6) / 2;
  for (let i = 0; i < segCount; i++) {
    if (sub.readUInt16BE(14 + i * 2) < code) continue; // endCode below the code point
    const start = sub.readUInt16BE(16 + segCount * 2 + i * 2);
    if (start > code) return 0;
    const delta = sub.readUInt16BE(16 + segCount * 4 + i * 2);
    const rangeAt = 16 + segCount * 6 + i * 2;
    const rangeOffset = sub.readUInt16BE(rangeAt);
    if (rangeOffset === 0) return (code + delta) & 0xffff;
    const glyph = sub.readUInt16BE(rangeAt + rangeOffset + (code - start) * 2);
    return glyph === 0 ? 0 : (glyph + delta) & 0xffff;
  }
  return 0;
}

/** Whether any format 4/12 subtable maps U+00AD and U+002D to one glyph. */
export function softHyphenSharesHyphenGlyph(font: Buffer): boolean {
  const cmap = findTable(font, 'cmap');
  if (!cmap) return false;
  return readEncodingRecords(cmap).some((r) => {
    const sub = cmap.subarray(r.offset);
    const glyph = lookup(sub, SOFT_HYPHEN);
    return glyph !== 0 && glyph === lookup(sub, HYPHEN_MINUS);
  });
}

function rebuildCmap(cmap: Buffer, edit: (map: CodepointMap) => void): Buffer {
  const records = readEncodingRecords(cmap);
  // Records may share one subtable; they keep sharing its rewritten copy.
  const rebuilt = new Map<number, Buffer>();
  for (const r of records) {
    if (rebuilt.has(r.offset)) continue;
    const sub = subtableAt(cmap, r.offset);
    const format = sub.readUInt16BE(0);
    const map = decodeSubtable(sub);
    if (!map) {
      rebuilt.set(r.offset, Buffer.from(sub));
      continue;
    }
    edit(map);
    rebuilt.set(r.offset, format === 4 ? encodeFormat4(map, sub.readUInt16BE(4)) : encodeFormat12(map, sub.readUInt32BE(8)));
  }

  const headerSize = CMAP_HEADER_SIZE + records.length * ENCODING_RECORD_SIZE;
  const newOffset = new Map<number, number>();
  let cursor = headerSize;
  for (const [old, data] of rebuilt) {
    newOffset.set(old, cursor);
    cursor += (data.length + 3) & ~3; // keep subtables 4-byte aligned
  }
  const out = Buffer.alloc(cursor);
  cmap.copy(out, 0, 0, CMAP_HEADER_SIZE); // version, numTables
  records.forEach((r, i) => {
    const at = CMAP_HEADER_SIZE + i * ENCODING_RECORD_SIZE;
    out.writeUInt16BE(r.platformId, at);
    out.writeUInt16BE(r.encodingId, at + 2);
    out.writeUInt32BE(newOffset.get(r.offset)!, at + 4);
  });
  for (const [old, data] of rebuilt) data.copy(out, newOffset.get(old)!);
  return out;
}

/**
 * Returns `font` itself when its soft hyphen has a glyph of its own (or none),
 * else a copy whose cmap no longer maps U+00AD (see the top of this file).
 */
export function unmapSharedSoftHyphen(font: Buffer): Buffer {
  if (!softHyphenSharesHyphenGlyph(font)) return font;
  const cmap = findTable(font, 'cmap')!;
  const next = rebuildCmap(cmap, (map) => map.delete(SOFT_HYPHEN));
  return replaceTables(font, new Map([['cmap', next]]));
}
