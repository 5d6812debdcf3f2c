// Minimal reader/rewriter for the `name` table of a single TrueType/OpenType
// (sfnt) font, used to give a font an extra family name in memory.
//
// Only the `name` table is rebuilt. Every other table is copied byte for
// byte (outlines, hinting, kerning, layout tables stay untouched), which is
// why this is done here instead of through a full font library: opentype.js
// and similar re-serialise the whole font and drop data on the way.
//
// References: OpenType spec, "Font file" (table directory, checksums) and
// "name — Naming table" (formats 0 and 1).

const SFNT_TRUETYPE = 0x00010000;
const SFNT_OPENTYPE_CFF = 0x4f54544f; // 'OTTO'
const SFNT_APPLE_TRUE = 0x74727565; // 'true'
const HEAD_MAGIC_SUM = 0xb1b0afba;
const TABLE_RECORD_SIZE = 16;
const OFFSET_TABLE_SIZE = 12;
const NAME_RECORD_SIZE = 12;

export const NameId = {
  family: 1,
  subfamily: 2,
  fullName: 4,
  postScriptName: 6,
  typographicFamily: 16,
  typographicSubfamily: 17,
} as const;

const PLATFORM_UNICODE = 0;
const PLATFORM_MAC = 1;
const PLATFORM_WINDOWS = 3;

export interface NameRecord {
  platformId: number;
  encodingId: number;
  languageId: number;
  nameId: number;
  /** Raw encoded string bytes as stored in the font. */
  bytes: Buffer;
}

interface TableRecord {
  tag: string;
  offset: number;
  length: number;
}

interface ParsedName {
  format: number;
  records: NameRecord[];
  /** Format 1 only: language-tag strings (UTF-16BE), kept as they are. */
  langTags: Buffer[];
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

function readTableDirectory(font: Buffer, face = 0): TableRecord[] {
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

function findTable(font: Buffer, tag: string, face = 0): Buffer | undefined {
  const rec = readTableDirectory(font, face).find((t) => t.tag === tag);
  return rec && font.subarray(rec.offset, rec.offset + rec.length);
}

function parseNameTable(table: Buffer): ParsedName {
  const format = table.readUInt16BE(0);
  if (format !== 0 && format !== 1) throw new Error(`unsupported name table format ${format}`);
  const count = table.readUInt16BE(2);
  const storage = table.readUInt16BE(4);
  const records: NameRecord[] = [];
  for (let i = 0; i < count; i++) {
    const at = 6 + i * NAME_RECORD_SIZE;
    const length = table.readUInt16BE(at + 8);
    const offset = storage + table.readUInt16BE(at + 10);
    records.push({
      platformId: table.readUInt16BE(at),
      encodingId: table.readUInt16BE(at + 2),
      languageId: table.readUInt16BE(at + 4),
      nameId: table.readUInt16BE(at + 6),
      bytes: Buffer.from(table.subarray(offset, offset + length)),
    });
  }
  const langTags: Buffer[] = [];
  if (format === 1) {
    const at = 6 + count * NAME_RECORD_SIZE;
    const tagCount = table.readUInt16BE(at);
    for (let i = 0; i < tagCount; i++) {
      const length = table.readUInt16BE(at + 2 + i * 4);
      const offset = storage + table.readUInt16BE(at + 4 + i * 4);
      langTags.push(Buffer.from(table.subarray(offset, offset + length)));
    }
  }
  return { format, records, langTags };
}

function buildNameTable(name: ParsedName): Buffer {
  const count = name.records.length;
  const headerSize =
    6 + count * NAME_RECORD_SIZE + (name.format === 1 ? 2 + name.langTags.length * 4 : 0);
  const header = Buffer.alloc(headerSize);
  const strings: Buffer[] = [];
  let storageSize = 0;
  // Identical strings share one copy in storage, as font tools usually do.
  const seen = new Map<string, number>();
  const place = (bytes: Buffer): number => {
    const key = bytes.toString('hex');
    const known = seen.get(key);
    if (known !== undefined) return known;
    const offset = storageSize;
    strings.push(bytes);
    storageSize += bytes.length;
    seen.set(key, offset);
    return offset;
  };

  header.writeUInt16BE(name.format, 0);
  header.writeUInt16BE(count, 2);
  header.writeUInt16BE(headerSize, 4);
  name.records.forEach((r, i) => {
    const at = 6 + i * NAME_RECORD_SIZE;
    header.writeUInt16BE(r.platformId, at);
    header.writeUInt16BE(r.encodingId, at + 2);
    header.writeUInt16BE(r.languageId, at + 4);
    header.writeUInt16BE(r.nameId, at + 6);
    header.writeUInt16BE(r.bytes.length, at + 8);
    header.writeUInt16BE(place(r.bytes), at + 10);
  });
  if (name.format === 1) {
    const at = 6 + count * NAME_RECORD_SIZE;
    header.writeUInt16BE(name.langTags.length, at);
    name.langTags.forEach((tag, i) => {
      header.writeUInt16BE(tag.length, at + 2 + i * 4);
      header.writeUInt16BE(place(tag), at + 4 + i * 4);
    });
  }
  if (storageSize > 0xffff) throw new Error('name table string storage exceeds 64 KiB');
  return Buffer.concat([header, ...strings]);
}

// ---- string encodings -------------------------------------------------------

function isUtf16(r: Pick<NameRecord, 'platformId' | 'encodingId'>): boolean {
  return (
    r.platformId === PLATFORM_UNICODE ||
    (r.platformId === PLATFORM_WINDOWS && (r.encodingId === 0 || r.encodingId === 1 || r.encodingId === 10))
  );
}

function isMacRoman(r: Pick<NameRecord, 'platformId' | 'encodingId'>): boolean {
  return r.platformId === PLATFORM_MAC && r.encodingId === 0;
}

function decodeUtf16be(bytes: Buffer): string {
  const swapped = Buffer.from(bytes);
  swapped.swap16();
  return swapped.toString('utf16le');
}

function encodeUtf16be(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf16le');
  bytes.swap16();
  return bytes;
}

/** Decodes a record, or returns null for encodings this module does not handle. */
export function decodeName(r: NameRecord): string | null {
  if (isUtf16(r)) return decodeUtf16be(r.bytes);
  // Mac Roman agrees with ASCII below 0x80; anything above is left alone.
  if (isMacRoman(r) && r.bytes.every((b) => b < 0x80)) return r.bytes.toString('latin1');
  return null;
}

function encodeLike(r: NameRecord, text: string): Buffer | null {
  if (isUtf16(r)) return encodeUtf16be(text);
  if (isMacRoman(r) && /^[\x20-\x7e]*$/.test(text)) return Buffer.from(text, 'latin1');
  return null;
}

// ---- public API -------------------------------------------------------------

/** All name records of a font, or of one face of a collection (throws on malformed fonts). */
export function readNameRecords(font: Buffer, face = 0): NameRecord[] {
  const table = findTable(font, 'name', face);
  if (!table) throw new Error('font has no name table');
  return parseNameTable(table).records;
}

/** First decodable string for a name id, preferring Windows English records. */
export function getName(font: Buffer, nameId: number, face = 0): string | null {
  const records = readNameRecords(font, face).filter((r) => r.nameId === nameId);
  const windowsEn = records.find((r) => r.platformId === PLATFORM_WINDOWS && r.languageId === 0x409);
  for (const r of windowsEn ? [windowsEn, ...records] : records) {
    const text = decodeName(r);
    if (text !== null) return text;
  }
  return null;
}

/**
 * The family the font is matched under: typographic family (16) if present,
 * else legacy family (1). Typst does the same.
 */
export function getFamilyName(font: Buffer, face = 0): string {
  const family = getName(font, NameId.typographicFamily, face) ?? getName(font, NameId.family, face);
  if (family === null) throw new Error('font has no family name');
  return family;
}

/**
 * Returns a copy of `font` whose family name is `alias`.
 *
 * Rewritten records (all platforms/encodings that can represent the alias):
 *  - 1 (family) and 16 (typographic family): the original family prefix is
 *    replaced, so "Arimo Medium" would become "<alias> Medium";
 *  - 4 (full name): same prefix replacement ("Arimo Bold" -> "<alias> Bold");
 *    Typst reads the style from it as well, so the suffix must survive.
 * Deliberately kept:
 *  - 2/17 (subfamilies): they carry no family name;
 *  - 3 (unique id) and 6 (PostScript name): the PostScript name becomes the
 *    PDF /BaseFont, and it should keep naming the font that is really embedded
 *    (e.g. "Arimo-Bold") rather than claim to be a trademarked original.
 */
export function renameFamily(font: Buffer, alias: string): Buffer {
  const tables = readTableDirectory(font);
  const nameRec = tables.find((t) => t.tag === 'name');
  if (!nameRec) throw new Error('font has no name table');
  const original = getFamilyName(font);
  const name = parseNameTable(font.subarray(nameRec.offset, nameRec.offset + nameRec.length));

  const rewritable = new Set<number>([NameId.family, NameId.fullName, NameId.typographicFamily]);
  let changed = 0;
  for (const r of name.records) {
    if (!rewritable.has(r.nameId)) continue;
    const text = decodeName(r);
    if (text === null) continue;
    let next: string;
    if (text.startsWith(original)) next = alias + text.slice(original.length);
    else if (r.nameId === NameId.fullName) continue; // unusual full name: leave it
    else next = alias;
    const bytes = encodeLike(r, next);
    if (bytes === null) continue;
    r.bytes = bytes;
    changed++;
  }
  if (changed === 0) throw new Error(`no family name record could be rewritten to "${alias}"`);

  const replaced = new Map<string, Buffer>([['name', buildNameTable(name)]]);
  return rebuildFont(font, tables, replaced);
}

// ---- whole-font layout ------------------------------------------------------

function pad4(n: number): number {
  return (n + 3) & ~3;
}

/** OpenType table checksum: sum of big-endian uint32 words, zero padded. */
export function tableChecksum(data: Buffer): number {
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
  const dataOf = (t: TableRecord): Buffer =>
    replaced.get(t.tag) ?? font.subarray(t.offset, t.offset + t.length);
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
    if (((HEAD_MAGIC_SUM - tableChecksum(copy)) >>> 0) !== adjustment) {
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
