// Minimal reader/rewriter for the `name` table of a single TrueType/OpenType
// (sfnt) font, used to give a font an extra family name in memory.
//
// Only the `name` table is rebuilt. Every other table is copied byte for
// byte (outlines, hinting, kerning, layout tables stay untouched), which is
// why this is done here instead of through a full font library: opentype.js
// and similar re-serialise the whole font and drop data on the way.
//
// References: OpenType spec, "name — Naming table" (formats 0 and 1); the
// container itself is read and rebuilt by sfnt-tables.ts.

import { findTable, readTableDirectory, rebuildFont } from './sfnt-tables.js';

const NAME_RECORD_SIZE = 12;

const NameId = {
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

interface ParsedName {
  format: number;
  records: NameRecord[];
  /** Format 1 only: language-tag strings (UTF-16BE), kept as they are. */
  langTags: Buffer[];
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
  const headerSize = 6 + count * NAME_RECORD_SIZE + (name.format === 1 ? 2 + name.langTags.length * 4 : 0);
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
    else if (r.nameId === NameId.fullName)
      continue; // unusual full name: leave it
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
