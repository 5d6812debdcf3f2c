/** The shapes of the font catalog, apart from the code that builds it (so a type costs no import of the loader). */

/** A face's style, from its OS/2 table. */
export type FontStyle = 'normal' | 'italic' | 'oblique';

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
  /** npm package that ships the files, 'FONT_PATH' for the operator's, 'typst' for fonts built into the binding. */
  source: string;
  /** The Typst engines that have this family, when not all (a font built into one binding only). */
  typst?: string[];
}

/** dist/fonts/catalog.json, written at build time by scripts/fonts/prepare.ts. */
export interface PreparedCatalog {
  /** File names in dist/fonts/, in load order. */
  files: string[];
  families: FontFamilyInfo[];
}

export interface FontCatalog {
  /** Absolute paths, in load order: the operator's first, so they win ties in Typst's fallback. */
  files: string[];
  families: FontFamilyInfo[];
}
