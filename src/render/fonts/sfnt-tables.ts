// The sfnt (TrueType/OpenType) container: face offsets in a collection, the
// table directory, table checksums, and rebuilding a font with some tables
// replaced while every other table is copied byte for byte.
//
// Reference: OpenType spec, "Font file" (table directory, checksums).

const SFNT_TRUETYPE = 0x00010000;
const SFNT_OPENTYPE_CFF = 0x4f54544f; // 'OTTO'
const SFNT_APPLE_TRUE = 0x74727565; // 'true'
const HEAD_MAGIC_SUM = 0xb1b0afba;
const TABLE_RECORD_SIZE = 16;
const OFFSET_TABLE_SIZE = 12;

export interface TableRecord {
  tag: string;
  offset: number;
  length: number;
}

/**
 * Where each face's table directory starts: 0 for a single font, the
 * offsets listed in the header of a collection ('ttcf'). Table offsets in
 * a collection count from the start of the file, so every reader below
 * takes the face's directory offset and the whole file.
 */
export function faceOffsets(file: Buffer): number[] {
  if (file.length < OFFSET_TABLE_SIZE) throw new Error('too short to be a font');
  if (file.toString('latin1', 0, 4) !== 'ttcf') return [0];
  const count = file.readUInt32BE(8);
  if (count === 0 || 12 + count * 4 > file.length) throw new Error('broken font collection header');
  return Array.from({ length: count }, (_, i) => file.readUInt32BE(12 + i * 4));
}

export function readTableDirectory(font: Buffer, face = 0): TableRecord[] {
  if (font.length < face + OFFSET_TABLE_SIZE) throw new Error('font too short');
  const version = font.readUInt32BE(face);
  if (version !== SFNT_TRUETYPE && version !== SFNT_OPENTYPE_CFF && version !== SFNT_APPLE_TRUE) {
    // WOFF and WOFF2 are not handled here (nor by Typst); collections go through faceOffsets().
    throw new Error(`unsupported sfnt version 0x${version.toString(16)}`);
  }
  const numTables = font.readUInt16BE(face + 4);
  if (face + OFFSET_TABLE_SIZE + numTables * TABLE_RECORD_SIZE > font.length) throw new Error('table directory out of bounds');
  const tables: TableRecord[] = [];
  for (let i = 0; i < numTables; i++) {
    const at = face + OFFSET_TABLE_SIZE + i * TABLE_RECORD_SIZE;
    const tag = font.toString('latin1', at, at + 4);
    const offset = font.readUInt32BE(at + 8);
    const length = font.readUInt32BE(at + 12);
    if (offset + length > font.length) throw new Error(`table ${tag} out of bounds`);
    tables.push({ tag, offset, length });
  }
  return tables;
}

export function findTable(font: Buffer, tag: string, face = 0): Buffer | undefined {
  const rec = readTableDirectory(font, face).find((t) => t.tag === tag);
  return rec && font.subarray(rec.offset, rec.offset + rec.length);
}

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
export function rebuildFont(font: Buffer, tables: TableRecord[], replaced: Map<string, Buffer>): Buffer {
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

/**
 * Returns a copy of `font` with the given tables (by tag) replaced, laid out
 * as renameFamily does: checksums and head.checkSumAdjustment recomputed.
 */
export function replaceTables(font: Buffer, replaced: Map<string, Buffer>): Buffer {
  const tables = readTableDirectory(font);
  for (const tag of replaced.keys()) {
    if (!tables.some((t) => t.tag === tag)) throw new Error(`font has no ${tag} table`);
  }
  return rebuildFont(font, tables, replaced);
}

/** Raw bytes of a table, for tests and diagnostics. */
export function getTable(font: Buffer, tag: string, face = 0): Buffer | undefined {
  return findTable(font, tag, face);
}
