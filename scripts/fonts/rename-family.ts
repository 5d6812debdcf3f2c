// Gives a font an extra family name: rewrites the `name` table of a single
// TrueType/OpenType (sfnt) font, in memory, at build time.
//
// Only the `name` table is rebuilt. Every other table is copied byte for
// byte (outlines, hinting, kerning, layout tables stay untouched), which is
// why this is done here instead of through a full font library: opentype.js
// and similar re-serialise the whole font and drop data on the way.
//
// References: OpenType spec, "name — Naming table" (formats 0 and 1); the
// table is read by src/render/fonts/sfnt-name.ts, the font rebuilt by
// sfnt-rebuild.ts.

import {
  decodeName,
  getFamilyName,
  isMacRoman,
  isUtf16,
  NAME_RECORD_SIZE,
  NameId,
  type NameRecord,
  type ParsedName,
  parseNameTable,
} from '../../src/render/fonts/sfnt-name.js';
import { findTable } from '../../src/render/fonts/sfnt-tables.js';
import { replaceTables } from './sfnt-rebuild.js';

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

function encodeUtf16be(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf16le');
  bytes.swap16();
  return bytes;
}

function encodeLike(r: NameRecord, text: string): Buffer | null {
  if (isUtf16(r)) return encodeUtf16be(text);
  if (isMacRoman(r) && /^[\x20-\x7e]*$/.test(text)) return Buffer.from(text, 'latin1');
  return null;
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
  const table = findTable(font, 'name');
  if (!table) throw new Error('font has no name table');
  const original = getFamilyName(font);
  const name = parseNameTable(table);

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

  return replaceTables(font, new Map([['name', buildNameTable(name)]]));
}
