// Reader for the `name` table of a TrueType/OpenType (sfnt) font: the
// family a font is matched under. The build gives fonts extra family names
// with scripts/fonts/rename-family.ts, which rewrites this table.
//
// References: OpenType spec, "name — Naming table" (formats 0 and 1); the
// container itself is read by sfnt-tables.ts.

import { findTable } from './sfnt-tables.js';

export const NAME_RECORD_SIZE = 12;

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

export interface ParsedName {
  format: number;
  records: NameRecord[];
  /** Format 1 only: language-tag strings (UTF-16BE), kept as they are. */
  langTags: Buffer[];
}

export function parseNameTable(table: Buffer): ParsedName {
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

// ---- string encodings -------------------------------------------------------

export function isUtf16(r: Pick<NameRecord, 'platformId' | 'encodingId'>): boolean {
  return (
    r.platformId === PLATFORM_UNICODE ||
    (r.platformId === PLATFORM_WINDOWS && (r.encodingId === 0 || r.encodingId === 1 || r.encodingId === 10))
  );
}

export function isMacRoman(r: Pick<NameRecord, 'platformId' | 'encodingId'>): boolean {
  return r.platformId === PLATFORM_MAC && r.encodingId === 0;
}

function decodeUtf16be(bytes: Buffer): string {
  const swapped = Buffer.from(bytes);
  swapped.swap16();
  return swapped.toString('utf16le');
}

/** Decodes a record, or returns null for encodings this module does not handle. */
export function decodeName(r: NameRecord): string | null {
  if (isUtf16(r)) return decodeUtf16be(r.bytes);
  // Mac Roman agrees with ASCII below 0x80; anything above is left alone.
  if (isMacRoman(r) && r.bytes.every((b) => b < 0x80)) return r.bytes.toString('latin1');
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
