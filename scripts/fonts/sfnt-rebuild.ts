// Rebuilding an sfnt (TrueType/OpenType) font with some tables replaced
// while every other table is copied byte for byte, and checking the table
// checksums of the result.
//
// Reference: OpenType spec, "Font file" (table directory, checksums).

import { OFFSET_TABLE_SIZE, readTableDirectory, TABLE_RECORD_SIZE, type TableRecord } from '../../src/render/fonts/sfnt-tables.js';

const HEAD_MAGIC_SUM = 0xb1b0afba;

function pad4(n: number): number {
  return (n + 3) & ~3;
}

/** OpenType table checksum: sum of big-endian uint32 words, zero padded. */
function tableChecksum(data: Buffer): number {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const whole = data.length & ~3;
  let sum = 0;
  for (let i = 0; i < whole; i += 4) sum = (sum + view.getUint32(i)) >>> 0;
  for (let i = whole; i < data.length; i++) sum = (sum + (data[i]! << (24 - 8 * (i - whole)))) >>> 0;
  return sum;
}

/**
 * Lays the font out again with some tables replaced: table directory order
 * (sorted by tag) and physical table order are preserved, every table starts
 * on a 4-byte boundary, checksums and head.checkSumAdjustment are recomputed.
 * A DSIG signature, if any, no longer matches; Typst and PDF viewers ignore it.
 */
function rebuildFont(font: Buffer, tables: TableRecord[], replaced: Map<string, Buffer>): Buffer {
  const dataOf = (t: TableRecord): Buffer => replaced.get(t.tag) ?? font.subarray(t.offset, t.offset + t.length);
  const physical = [...tables].sort((a, b) => a.offset - b.offset);
  const dirSize = OFFSET_TABLE_SIZE + tables.length * TABLE_RECORD_SIZE;

  const newOffset = new Map<string, number>();
  let cursor = pad4(dirSize);
  for (const t of physical) {
    newOffset.set(t.tag, cursor);
    cursor += pad4(dataOf(t).length);
  }

  const out = Buffer.alloc(cursor); // zero filled, so padding is zero
  font.copy(out, 0, 0, OFFSET_TABLE_SIZE); // version, numTables, search fields unchanged
  let headOffset = -1;
  let tablesSum = 0;
  tables.forEach((t, i) => {
    const data = dataOf(t);
    const offset = newOffset.get(t.tag)!;
    data.copy(out, offset);
    if (t.tag === 'head') {
      headOffset = offset;
      out.writeUInt32BE(0, offset + 8); // checksum is defined with adjustment = 0
    }
    const checksum = tableChecksum(out.subarray(offset, offset + data.length));
    tablesSum = (tablesSum + checksum) >>> 0;
    const at = OFFSET_TABLE_SIZE + i * TABLE_RECORD_SIZE;
    out.write(t.tag, at, 'latin1');
    out.writeUInt32BE(checksum, at + 4);
    out.writeUInt32BE(offset, at + 8);
    out.writeUInt32BE(data.length, at + 12);
  });
  if (headOffset >= 0) {
    // Tables are 4-aligned and zero padded, so the whole-file sum is the
    // directory's sum plus the table checksums: no second pass needed.
    const fileSum = (tableChecksum(out.subarray(0, dirSize)) + tablesSum) >>> 0;
    out.writeUInt32BE((HEAD_MAGIC_SUM - fileSum) >>> 0, headOffset + 8);
  }
  return out;
}

/**
 * Returns a copy of `font` with the given tables (by tag) replaced, laid out
 * again by rebuildFont(): checksums and head.checkSumAdjustment recomputed.
 */
export function replaceTables(font: Buffer, replaced: Map<string, Buffer>): Buffer {
  const tables = readTableDirectory(font);
  for (const tag of replaced.keys()) {
    if (!tables.some((t) => t.tag === tag)) throw new Error(`font has no ${tag} table`);
  }
  return rebuildFont(font, tables, replaced);
}

/**
 * Checks directory checksums and head.checkSumAdjustment; returns a list of
 * problems (empty when the font is consistent). Used by tests.
 */
export function verifyChecksums(font: Buffer): string[] {
  const problems: string[] = [];
  let headOffset = -1;
  readTableDirectory(font).forEach((t, i) => {
    const stored = font.readUInt32BE(OFFSET_TABLE_SIZE + i * TABLE_RECORD_SIZE + 4);
    const data = Buffer.from(font.subarray(t.offset, t.offset + t.length));
    if (t.tag === 'head') {
      headOffset = t.offset;
      data.writeUInt32BE(0, 8);
    }
    if (t.offset % 4 !== 0) problems.push(`${t.tag}: offset not 4-byte aligned`);
    if (tableChecksum(data) !== stored) problems.push(`${t.tag}: checksum mismatch`);
  });
  if (headOffset >= 0) {
    const copy = Buffer.from(font);
    const adjustment = copy.readUInt32BE(headOffset + 8);
    copy.writeUInt32BE(0, headOffset + 8);
    if ((HEAD_MAGIC_SUM - tableChecksum(copy)) >>> 0 !== adjustment) {
      problems.push('head.checkSumAdjustment mismatch');
    }
  }
  return problems;
}
