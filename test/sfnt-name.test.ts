import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { renameFamily } from '../scripts/fonts/rename-family.js';
import { verifyChecksums } from '../scripts/fonts/sfnt-rebuild.js';
import { decodeName, getFamilyName, getName, readNameRecords } from '../src/render/fonts/sfnt-name.js';
import { findTable } from '../src/render/fonts/sfnt-tables.js';

const require = createRequire(import.meta.url);

function utf16be(text: string): Buffer {
  return Buffer.from(text, 'utf16le').swap16();
}

type Rec = [platform: number, encoding: number, language: number, nameId: number, text: string];

/** A format-0 name table; Mac records are ASCII, others UTF-16BE. */
function nameTable(records: Rec[]): Buffer {
  const header = Buffer.alloc(6 + records.length * 12);
  header.writeUInt16BE(0, 0);
  header.writeUInt16BE(records.length, 2);
  header.writeUInt16BE(header.length, 4);
  const strings: Buffer[] = [];
  let offset = 0;
  records.forEach(([p, e, l, id, text], i) => {
    const bytes = p === 1 ? Buffer.from(text, 'latin1') : utf16be(text);
    const at = 6 + i * 12;
    for (const [j, v] of [p, e, l, id, bytes.length, offset].entries()) header.writeUInt16BE(v, at + j * 2);
    strings.push(bytes);
    offset += bytes.length;
  });
  return Buffer.concat([header, ...strings]);
}

/** Minimal sfnt container (checksums left zero; the rewriter recomputes them). */
function sfnt(tables: Record<string, Buffer>): Buffer {
  const tags = Object.keys(tables).sort();
  const dir = Buffer.alloc(12 + tags.length * 16);
  dir.writeUInt32BE(0x00010000, 0);
  dir.writeUInt16BE(tags.length, 4);
  const body: Buffer[] = [];
  let offset = dir.length;
  tags.forEach((tag, i) => {
    const data = tables[tag]!;
    const padded = Buffer.alloc((data.length + 3) & ~3);
    data.copy(padded);
    dir.write(tag, 12 + i * 16, 'latin1');
    dir.writeUInt32BE(offset, 12 + i * 16 + 8);
    dir.writeUInt32BE(data.length, 12 + i * 16 + 12);
    body.push(padded);
    offset += padded.length;
  });
  return Buffer.concat([dir, ...body]);
}

function namesById(font: Buffer, platform: number): Record<number, string | null> {
  const out: Record<number, string | null> = {};
  for (const r of readNameRecords(font)) if (r.platformId === platform) out[r.nameId] = decodeName(r);
  return out;
}

describe('sfnt name rewriter', () => {
  test('rewrites Mac and Windows family records and keeps the rest', () => {
    const head = Buffer.alloc(54);
    head.writeUInt32BE(0x5f0f3cf5, 12); // magic number
    const font = sfnt({
      head,
      name: nameTable([
        [1, 0, 0, 1, 'Arimo'],
        [1, 0, 0, 2, 'Bold'],
        [1, 0, 0, 4, 'Arimo Bold'],
        [1, 0, 0, 6, 'Arimo-Bold'],
        [3, 1, 0x409, 1, 'Arimo'],
        [3, 1, 0x409, 2, 'Bold'],
        [3, 1, 0x409, 4, 'Arimo Bold'],
        [3, 1, 0x409, 6, 'Arimo-Bold'],
        [3, 1, 0x409, 16, 'Arimo'],
        [3, 1, 0x409, 17, 'Bold'],
      ]),
      zzzz: Buffer.from([1, 2, 3, 4, 5]), // odd length: exercises padding
    });
    const before = Buffer.from(font);

    const renamed = renameFamily(font, 'Times New Roman');

    assert.deepEqual(font, before, 'input is not modified');
    assert.deepEqual(verifyChecksums(renamed), []);
    assert.deepEqual(namesById(renamed, 1), { 1: 'Times New Roman', 2: 'Bold', 4: 'Times New Roman Bold', 6: 'Arimo-Bold' });
    assert.deepEqual(namesById(renamed, 3), {
      1: 'Times New Roman',
      2: 'Bold',
      4: 'Times New Roman Bold',
      6: 'Arimo-Bold',
      16: 'Times New Roman',
      17: 'Bold',
    });
    assert.deepEqual(findTable(renamed, 'zzzz'), Buffer.from([1, 2, 3, 4, 5]));
    assert.equal(getFamilyName(renamed), 'Times New Roman');
  });

  test('non-ASCII alias leaves Mac Roman records alone but renames Unicode ones', () => {
    const font = sfnt({
      name: nameTable([
        [1, 0, 0, 1, 'Arimo'],
        [3, 1, 0x409, 1, 'Arimo'],
      ]),
    });
    const renamed = renameFamily(font, 'Grotesk Ä');
    assert.equal(namesById(renamed, 1)[1], 'Arimo');
    assert.equal(namesById(renamed, 3)[1], 'Grotesk Ä');
  });

  test('real font: only the name table changes', () => {
    const path = require.resolve('@expo-google-fonts/arimo/700Bold/Arimo_700Bold.ttf');
    const font = readFileSync(path);
    const renamed = renameFamily(font, 'Helvetica');

    assert.deepEqual(verifyChecksums(renamed), []);
    assert.equal(getName(renamed, 1), 'Helvetica');
    assert.equal(getName(renamed, 2), 'Bold');
    assert.equal(getName(renamed, 4), 'Helvetica Bold');
    assert.equal(getName(renamed, 6), 'Arimo-Bold');
    assert.equal(getFamilyName(font), 'Arimo', 'original untouched');

    const tags = (f: Buffer) => Array.from({ length: f.readUInt16BE(4) }, (_, i) => f.toString('latin1', 12 + i * 16, 16 + i * 16));
    assert.deepEqual(tags(renamed), tags(font));
    for (const tag of tags(font)) {
      const a = findTable(font, tag)!;
      const b = findTable(renamed, tag)!;
      if (tag === 'head') {
        // Only checkSumAdjustment (bytes 8..11) may differ.
        assert.deepEqual(b.subarray(0, 8), a.subarray(0, 8));
        assert.deepEqual(b.subarray(12), a.subarray(12));
      } else if (tag !== 'name') {
        assert.ok(a.equals(b), `${tag} unchanged`);
      }
    }
    // Records other than the family/full name are carried over verbatim.
    const strip = (f: Buffer) =>
      readNameRecords(f)
        .filter((r) => ![1, 4, 16].includes(r.nameId))
        .map((r) => [r.platformId, r.encodingId, r.languageId, r.nameId, r.bytes.toString('hex')]);
    assert.deepEqual(strip(renamed), strip(font));
  });

  test('rejects font collections', () => {
    const ttc = Buffer.alloc(16);
    ttc.write('ttcf', 0, 'latin1');
    assert.throws(() => renameFamily(ttc, 'X'), /unsupported sfnt version/);
  });
});
