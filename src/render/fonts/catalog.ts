/**
 * The fonts a worker loads and GET /v1/fonts lists: the bundled set,
 * prepared as files at build time (scripts/fonts/prepare.ts), an operator's FONT_PATH
 * directory, and the fonts built into the Typst binding. Workers hand the
 * files to the compiler as paths (`fontArgs: [{ fontPaths }]`), which reads
 * a font only once a document uses it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TYPST_EMBEDDED_FAMILIES } from './embedded-families.js';
import type { FontCatalog, FontFamilyInfo, FontStyleInfo, PreparedCatalog } from './types.js';
import { getFamilyName } from './sfnt-name.js';
import { faceOffsets, findTable } from './sfnt-tables.js';

/** dist/fonts/ (this module is dist/src/render/fonts/catalog.js). */
export const PREPARED_DIR = fileURLToPath(new URL('../../../fonts/', import.meta.url));
export const PREPARED_CATALOG = 'catalog.json';

const FONT_FILE = /\.(ttf|otf|ttc|otc)$/i;

/** Weight and style from the OS/2 table (usWeightClass, fsSelection). */
export function readStyle(font: Buffer, face = 0): FontStyleInfo {
  const os2 = findTable(font, 'OS/2', face);
  if (!os2 || os2.length < 64) throw new Error('font has no OS/2 table');
  const fsSelection = os2.readUInt16BE(62);
  const style: FontStyleInfo['style'] = fsSelection & 0x0001 ? 'italic' : fsSelection & 0x0200 ? 'oblique' : 'normal';
  return { style, weight: os2.readUInt16BE(4) };
}

/** Every font file under `dir` (recursively, as the compiler searches it), sorted. */
function fontFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && FONT_FILE.test(entry.name))
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name))
    .sort();
}

/**
 * Reads the operator's fonts, face by face. A file that does not parse as a
 * font throws an error naming it: the service refuses to start rather than
 * run without a font its operator expects.
 */
function readOperatorFonts(dir: string): FontCatalog {
  const byFamily = new Map<string, FontFamilyInfo>();
  const files = fontFiles(dir);
  for (const file of files) {
    try {
      const font = readFileSync(file);
      for (const face of faceOffsets(font)) {
        const family = getFamilyName(font, face);
        const info = byFamily.get(family) ?? { family, aliasOf: null, styles: [], source: 'FONT_PATH' };
        info.styles.push(readStyle(font, face));
        byFamily.set(family, info);
      }
    } catch (error) {
      throw new Error(`FONT_PATH: ${file} is not a usable font (${(error as Error).message})`);
    }
  }
  return { files, families: [...byFamily.values()] };
}

/** The bundled set as prepared at build time. */
function readPreparedCatalog(dir = PREPARED_DIR): FontCatalog {
  const path = join(dir, PREPARED_CATALOG);
  if (!existsSync(path)) throw new Error(`the bundled fonts are not prepared (${path} is missing): run \`npm run build\``);
  const prepared = JSON.parse(readFileSync(path, 'utf8')) as PreparedCatalog;
  return { files: prepared.files.map((name) => join(dir, name)), families: prepared.families };
}

/** Every font a worker loads, the operator's (`fontPath`) first, and every family a template can name. */
export function loadFontCatalog(fontPath?: string): FontCatalog {
  const bundled = readPreparedCatalog();
  const operator = fontPath ? readOperatorFonts(fontPath) : { files: [], families: [] };
  const builtin = TYPST_EMBEDDED_FAMILIES.map(({ family, styles, typst }) => ({
    family,
    aliasOf: null,
    styles,
    source: 'typst',
    ...(typst ? { typst } : {}),
  }));
  return { files: [...operator.files, ...bundled.files], families: [...operator.families, ...bundled.families, ...builtin] };
}
