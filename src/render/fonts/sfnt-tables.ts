// Reading the sfnt (TrueType/OpenType) container: face offsets in a
// collection and the table directory, to find a table's bytes. The build
// rewrites tables with scripts/fonts/sfnt-rebuild.ts.
//
// Reference: OpenType spec, "Font file" (table directory).

const SFNT_TRUETYPE = 0x00010000;
const SFNT_OPENTYPE_CFF = 0x4f54544f; // 'OTTO'
const SFNT_APPLE_TRUE = 0x74727565; // 'true'
export const TABLE_RECORD_SIZE = 16;
export const OFFSET_TABLE_SIZE = 12;

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

/** Raw bytes of a table (a view into `font`), or undefined when the font has none by that tag. */
export function findTable(font: Buffer, tag: string, face = 0): Buffer | undefined {
  const rec = readTableDirectory(font, face).find((t) => t.tag === tag);
  return rec && font.subarray(rec.offset, rec.offset + rec.length);
}
