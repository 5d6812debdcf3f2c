// Unknown-font detection for templates.
//
// Typst 0.11.1 (as bundled in typst-ts-node-compiler 0.5.0-rc7) never warns
// about an unknown font family: the "unknown font family" warning only exists
// from Typst 0.12 on, and this binding drops all warnings of a successful
// compile anyway (takeDiagnostics() is null). So the check is done here, in
// two steps:
//   1. extractFontFamilies: literal family names after `font:` in the source;
//   2. findUnknownFamilies: ask the compiler which of them it cannot resolve.
// Names computed at run time (variables, sys.inputs) are not seen by step 1.

import type { NodeCompiler } from '@myriaddreamin/typst-ts-node-compiler';

const FONT_ARG = /(?<![\w-])font\s*:\s*/g;
const STRING_LITERAL = /"((?:[^"\\]|\\.)*)"/y;

function unescapeTypst(body: string): string {
  return body.replace(/\\(["\\])/g, '$1');
}

/**
 * Literal family names given as `font: "X"` or `font: ("X", "Y", ...)`
 * (set rules and direct `text(...)` calls alike), without duplicates.
 */
export function extractFontFamilies(source: string): string[] {
  const found = new Set<string>();
  for (const match of source.matchAll(FONT_ARG)) {
    let at = match.index + match[0].length;
    if (source[at] === '"') {
      STRING_LITERAL.lastIndex = at;
      const lit = STRING_LITERAL.exec(source);
      if (lit) found.add(unescapeTypst(lit[1]!));
    } else if (source[at] === '(') {
      // Collect the string literals up to the matching parenthesis.
      let depth = 0;
      for (; at < source.length; at++) {
        const ch = source[at];
        if (ch === '(') depth++;
        else if (ch === ')' && --depth === 0) break;
        else if (ch === '"') {
          STRING_LITERAL.lastIndex = at;
          const lit = STRING_LITERAL.exec(source);
          if (!lit) break;
          found.add(unescapeTypst(lit[1]!));
          at = STRING_LITERAL.lastIndex - 1;
        }
      }
    }
  }
  return [...found];
}

function typstString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/**
 * The subset of `families` the compiler has no font for. Probes by measuring
 * a short Latin string with `fallback: false`: an unknown family shapes to
 * nothing and measures 0pt. This covers everything the compiler loaded
 * (bundled blobs, Typst's embedded fonts, system fonts).
 * Note: it replaces the compiler's main file, so call it between renders.
 */
export function findUnknownFamilies(compiler: NodeCompiler, families: string[]): string[] {
  if (families.length === 0) return [];
  const list = families.map(typstString).join(', ');
  const probe =
    `#context [#metadata((${list},).map(f => ` +
    `measure(text(font: f, fallback: false, "Hxg")).width.pt()))<font-probe>]`;
  const compiled = compiler.compile({ mainFileContent: probe });
  if (!compiled.result) throw new Error('font probe failed to compile');
  const [widths] = compiler.query(compiled.result, { selector: '<font-probe>', field: 'value' }) as [number[]];
  return families.filter((_, i) => widths[i] === 0);
}

/** Warning texts in the wording Typst 0.12+ uses for the same situation. */
export function unknownFontWarnings(compiler: NodeCompiler, source: string): string[] {
  return findUnknownFamilies(compiler, extractFontFamilies(source)).map(
    (family) => `unknown font family: ${family.toLowerCase()}`,
  );
}
