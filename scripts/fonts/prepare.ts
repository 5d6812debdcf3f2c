/**
 * Build step (`npm run build`): writes the bundled fonts, with their fixes
 * and renamed alias copies, as files into dist/fonts/, and a catalog.json
 * listing them in the order the workers load them and the families they
 * hold. Workers then give the compiler file paths: it reads a font only
 * when a document uses it, and an idle worker holds no font data at all.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PREPARED_CATALOG, PREPARED_DIR, readStyle } from '../../src/render/fonts/catalog.js';
import { getFamilyName } from '../../src/render/fonts/sfnt-name.js';
import type { FontFamilyInfo, PreparedCatalog } from '../../src/render/fonts/types.js';
import { BUNDLED_FAMILIES } from './bundled-families.js';
import { renameFamily } from './rename-family.js';
import { unmapSharedSoftHyphen } from './sfnt-cmap.js';

export function prepareFonts(dir = PREPARED_DIR): PreparedCatalog {
  const require = createRequire(import.meta.url);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  const families: FontFamilyInfo[] = [];
  const write = (family: string, i: number, font: Buffer) => {
    const name = `${String(files.length).padStart(3, '0')}-${family.replace(/[^A-Za-z0-9]+/g, '')}-${i}.ttf`;
    writeFileSync(join(dir, name), font);
    files.push(name);
  };

  for (const def of BUNDLED_FAMILIES) {
    // The cmap fix comes first so that the renamed copies below carry it too.
    const fonts = def.files.map((file) => unmapSharedSoftHyphen(readFileSync(require.resolve(file))));
    for (const [i, font] of fonts.entries()) {
      const actual = getFamilyName(font);
      // Guards against a package update that renames or reshuffles files.
      if (actual !== def.family) throw new Error(`${def.files[i]}: expected family "${def.family}", found "${actual}"`);
    }
    const styles = fonts.map((font) => readStyle(font));
    for (const [i, font] of fonts.entries()) write(def.family, i, font);
    families.push({ family: def.family, aliasOf: null, styles, source: def.pkg });
    for (const alias of def.aliases) {
      for (const [i, font] of fonts.entries()) write(alias, i, renameFamily(font, alias));
      families.push({ family: alias, aliasOf: def.family, styles, source: def.pkg });
    }
  }
  const catalog: PreparedCatalog = { files, families };
  writeFileSync(join(dir, PREPARED_CATALOG), `${JSON.stringify(catalog, null, 1)}\n`);
  return catalog;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { files } = prepareFonts();
  console.log(`fonts: ${files.length} files prepared in ${PREPARED_DIR}`);
}
