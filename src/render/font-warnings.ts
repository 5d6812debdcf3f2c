// Unknown-font detection for templates.
//
// Typst 0.11.1 (as bundled in typst-ts-node-compiler 0.5.0-rc7) never warns
// about an unknown font family: the "unknown font family" warning only exists
// from Typst 0.12 on, and this binding drops all warnings of a successful
// compile anyway (takeDiagnostics() is null). So the check is done here:
// literal family names after `font:` in the source are looked up in the
// families the worker loaded. Workers see no system fonts (FONTCONFIG_FILE is
// /dev/null in their environment), so that list is complete. Names computed at
// run time (variables, string concatenation) are not seen.

import type { Warning } from './protocol.js';

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
  return [...new Set(findFontFamilies(source).map((f) => f.family))];
}

interface FamilyAt {
  family: string;
  /** Index of the string literal in the source. */
  index: number;
}

function findFontFamilies(source: string): FamilyAt[] {
  const found: FamilyAt[] = [];
  for (const match of source.matchAll(FONT_ARG)) {
    let at = match.index + match[0].length;
    if (source[at] === '"') {
      STRING_LITERAL.lastIndex = at;
      const lit = STRING_LITERAL.exec(source);
      if (lit) found.push({ family: unescapeTypst(lit[1]!), index: at });
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
          found.push({ family: unescapeTypst(lit[1]!), index: at });
          at = STRING_LITERAL.lastIndex - 1;
        }
      }
    }
  }
  return found;
}

/**
 * One warning per family name the template asks for that is not loaded,
 * worded as Typst 0.12+ words it, with the 1-based line of its first mention.
 * `known` holds lower-case family names (Typst matches families case-insensitively).
 */
export function unknownFontWarnings(source: string, known: ReadonlySet<string>): Warning[] {
  const warned = new Set<string>();
  const warnings: Warning[] = [];
  for (const { family, index } of findFontFamilies(source)) {
    const name = family.toLowerCase();
    if (known.has(name) || warned.has(name)) continue;
    warned.add(name);
    const line = source.slice(0, index).split('\n').length;
    warnings.push({ message: `unknown font family: ${name}`, line });
  }
  return warnings;
}
