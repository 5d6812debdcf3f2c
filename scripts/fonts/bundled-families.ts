// Which fonts the renderer bundles, where they come from, and which extra
// family names they answer to. Pure data: prepare.ts writes the files and
// their catalog at build time, src/render/fonts/catalog.ts reads that
// catalog for the workers and GET /v1/fonts.

export interface BundledFamily {
  /** Family name inside the font files (prepare.ts checks it). */
  family: string;
  /** npm package that ships the TTF files (exact-pinned in package.json). */
  pkg: string;
  /** Files inside the package, resolved with require.resolve. */
  files: string[];
  /** Extra family names served by renamed copies. */
  aliases: string[];
}

// @expo-google-fonts/* lay files out as <dir>/<Prefix>_<dir>.ttf.
const EXPO_STYLES = ['400Regular', '700Bold', '400Regular_Italic', '700Bold_Italic'];
/** The script families come upright only. */
const UPRIGHT = EXPO_STYLES.slice(0, 2);

function expo(family: string, pkgName: string, prefix: string, aliases: string[] = [], styles = EXPO_STYLES): BundledFamily {
  const pkg = `@expo-google-fonts/${pkgName}`;
  return { family, pkg, files: styles.map((s) => `${pkg}/${s}/${prefix}_${s}.ttf`), aliases };
}

const script = (family: string, pkgName: string, prefix: string) => expo(family, pkgName, prefix, [], UPRIGHT);

export const BUNDLED_FAMILIES: BundledFamily[] = [
  // Metric-compatible stand-ins for the classic PostScript/Windows core fonts
  // (same advance widths, so text set in them breaks lines the same way).
  expo('Arimo', 'arimo', 'Arimo', ['Helvetica', 'Arial']),
  expo('Tinos', 'tinos', 'Tinos', ['Times', 'Times New Roman']),
  expo('Cousine', 'cousine', 'Cousine', ['Courier', 'Courier New']),
  // Widely used open families.
  expo('Roboto', 'roboto', 'Roboto'),
  expo('Inter', 'inter', 'Inter'),
  expo('Open Sans', 'open-sans', 'OpenSans'),
  expo('Lato', 'lato', 'Lato'),
  expo('Noto Sans', 'noto-sans', 'NotoSans'),
  expo('Noto Serif', 'noto-serif', 'NotoSerif'),
  // Scripts the families above lack, so that text in them prints with real
  // glyphs with no `font:` at all: Typst falls back to a family that covers
  // the characters. Where several do (Han characters), the first listed wins,
  // so Japanese forms are the default; `font: "Noto Sans SC"` (or TC, KR) picks others.
  script('Noto Sans JP', 'noto-sans-jp', 'NotoSansJP'),
  script('Noto Sans SC', 'noto-sans-sc', 'NotoSansSC'),
  script('Noto Sans TC', 'noto-sans-tc', 'NotoSansTC'),
  script('Noto Sans KR', 'noto-sans-kr', 'NotoSansKR'),
  script('Noto Sans Arabic', 'noto-sans-arabic', 'NotoSansArabic'),
  script('Noto Sans Hebrew', 'noto-sans-hebrew', 'NotoSansHebrew'),
  script('Noto Sans Devanagari', 'noto-sans-devanagari', 'NotoSansDevanagari'),
  script('Noto Sans Thai', 'noto-sans-thai', 'NotoSansThai'),
  // Emoji, last: monochrome outlines, which both engines' PDF export embeds like any font
  // (Typst 0.11 cannot put a colour emoji font into a PDF).
  script('Noto Emoji', 'noto-emoji', 'NotoEmoji'),
];
