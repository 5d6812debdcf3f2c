// Builds the in-memory font set handed to the Typst compiler at worker start:
//   NodeCompiler.create({ workspace, fontArgs: [{ fontBlobs: catalog.blobs }] })

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { BUNDLED_FAMILIES, TYPST_EMBEDDED_FAMILIES, type FontStyle } from './font-manifest.js';
import { unmapSharedSoftHyphen } from './sfnt-cmap.js';
import { getFamilyName, getTable, renameFamily } from './sfnt-name.js';

export type { FontStyle } from './font-manifest.js';

export interface FontStyleInfo {
  style: FontStyle;
  weight: number;
}

export interface FontFamilyInfo {
  /** Name to use in `#set text(font: ...)`. */
  family: string;
  /** Family whose glyphs are actually used, or null for a real family. */
  aliasOf: string | null;
  styles: FontStyleInfo[];
  /** npm package that ships the files, or 'typst' for fonts built into the binding. */
  source: string;
}

export interface FontCatalog {
  /** Font files (original and renamed copies) for `fontArgs: [{ fontBlobs }]`. */
  blobs: Buffer[];
  families: FontFamilyInfo[];
  /** Sum of blob sizes, i.e. font bytes held in memory. */
  totalBytes: number;
}

const require = createRequire(import.meta.url);

/** Weight and style from the OS/2 table (usWeightClass, fsSelection). */
function readStyle(font: Buffer): FontStyleInfo {
  const os2 = getTable(font, 'OS/2');
  if (!os2) throw new Error('font has no OS/2 table');
  const fsSelection = os2.readUInt16BE(62);
  const style: FontStyle = fsSelection & 0x0001 ? 'italic' : fsSelection & 0x0200 ? 'oblique' : 'normal';
  return { style, weight: os2.readUInt16BE(4) };
}

/**
 * Reads the bundled fonts, adds renamed copies for the aliases and lists
 * every family the compiler will know (bundled, aliases, Typst built-ins).
 * Synchronous and side-effect free apart from reading package files.
 */
export function loadFontCatalog(): FontCatalog {
  const blobs: Buffer[] = [];
  const families: FontFamilyInfo[] = [];

  for (const def of BUNDLED_FAMILIES) {
    // The cmap fix comes first so that the renamed copies below carry it too.
    const fonts = def.files.map((file) => unmapSharedSoftHyphen(readFileSync(require.resolve(file))));
    for (const [i, font] of fonts.entries()) {
      const actual = getFamilyName(font);
      // Guards against a package update that renames or reshuffles files.
      if (actual !== def.family) {
        throw new Error(`${def.files[i]}: expected family "${def.family}", found "${actual}"`);
      }
    }
    const styles = fonts.map(readStyle);
    blobs.push(...fonts);
    families.push({ family: def.family, aliasOf: null, styles, source: def.pkg });

    for (const alias of def.aliases) {
      blobs.push(...fonts.map((font) => renameFamily(font, alias)));
      families.push({ family: alias, aliasOf: def.family, styles, source: def.pkg });
    }
  }

  for (const builtin of TYPST_EMBEDDED_FAMILIES) {
    families.push({ family: builtin.family, aliasOf: null, styles: builtin.styles, source: 'typst' });
  }

  const totalBytes = blobs.reduce((sum, b) => sum + b.length, 0);
  return { blobs, families, totalBytes };
}
