// Unknown-font detection for templates, over the template's bytes.
//
// Typst 0.11.1 (as bundled in typst-ts-node-compiler 0.5.0-rc7) never warns
// about an unknown font family: the "unknown font family" warning only exists
// from Typst 0.12 on, and this binding drops all warnings of a successful
// compile anyway (takeDiagnostics() is null). So the check is done here:
// literal family names after `font:` in the source are looked up in the
// families the worker loaded. Workers see no system fonts, so that list is
// complete. Names computed at run time (variables, concatenation) are not seen.
//
// The template arrives as bytes and never becomes a JavaScript string (see
// docs/retention.md, zero data retention), so the scan and the comparison
// work on bytes, and a warning names the place of the family, not the family.

import type { Warning } from '../../api-values.js';
import { UNKNOWN_FONT } from '../../messages.js';
import { placeOf } from '../../bytes/text-position.js';
import { ownedBuffer } from '../../retention/owned-buffer.js';
import { wipe } from '../../retention/wipe.js';
import { BACKSLASH, CLOSE_PAREN, COLON, OPEN_PAREN, QUOTE } from '../../bytes/ascii.js';

const FONT = Buffer.from('font');

/** Family names, compared with bytes as Typst compares names: case-insensitively. */
export class FamilyNames {
  private readonly names: Buffer[];

  constructor(families: Iterable<string>) {
    this.names = [...families].map((family) => Buffer.from(family.toLowerCase()));
  }

  /** Whether `bytes[start, end)`, a family name as written (escapes already resolved), is one of the names. */
  has(bytes: Uint8Array, start: number, end: number): boolean {
    const length = end - start;
    outer: for (const name of this.names) {
      if (name.length !== length) continue;
      for (let i = 0; i < length; i++) {
        let b = bytes[start + i]!;
        if (b >= 0x41 && b <= 0x5a) b += 0x20;
        if (b !== name[i]) continue outer;
      }
      return true;
    }
    return false;
  }
}

const isWordByte = (b: number) =>
  (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === 0x2d;
const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

interface Literal {
  /** Where the literal starts (its opening quote). */
  at: number;
  /** Index after its closing quote. */
  end: number;
  /** Its content without escapes, in a scratch buffer. */
  name: Buffer;
}

/** A Typst string literal at `at` (a quote), unescaped into `scratch`; undefined if it does not close. */
function readLiteral(source: Uint8Array, at: number, scratch: Buffer): Literal | undefined {
  let length = 0;
  for (let i = at + 1; i < source.length; i++) {
    let b = source[i]!;
    if (b === QUOTE) return { at, end: i + 1, name: scratch.subarray(0, length) };
    if (b === BACKSLASH && (source[i + 1] === QUOTE || source[i + 1] === BACKSLASH)) b = source[++i]!;
    if (length < scratch.length) scratch[length] = b;
    length++;
    if (length > scratch.length) return { at, end: i + 1, name: scratch.subarray(0, 0) }; // too long to be a family
  }
  return undefined;
}

/**
 * Every literal family given as `font: "X"` or `font: ("X", "Y", ...)`, in
 * set rules and direct calls alike, as the places where they are written.
 * `visit` gets each literal; the scratch buffer it names is reused.
 */
function forEachFontLiteral(source: Uint8Array, visit: (literal: Literal) => void): void {
  const scratch = ownedBuffer(256);
  const bytes = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  try {
    for (let found = bytes.indexOf(FONT); found !== -1; ) {
      let at = found + FONT.length;
      const next = () => bytes.indexOf(FONT, found + 1);
      if (found > 0 && isWordByte(source[found - 1]!)) {
        found = next();
        continue;
      }
      while (at < source.length && isSpace(source[at]!)) at++;
      if (source[at] !== COLON) {
        found = next();
        continue;
      }
      at++;
      while (at < source.length && isSpace(source[at]!)) at++;
      if (source[at] === QUOTE) {
        const literal = readLiteral(source, at, scratch);
        if (literal) visit(literal);
      } else if (source[at] === OPEN_PAREN) {
        for (let depth = 0; at < source.length; at++) {
          const b = source[at]!;
          if (b === OPEN_PAREN) depth++;
          else if (b === CLOSE_PAREN && --depth === 0) break;
          else if (b === QUOTE) {
            const literal = readLiteral(source, at, scratch);
            if (!literal) break;
            visit(literal);
            at = literal.end - 1;
          }
        }
      }
      found = next();
    }
  } finally {
    wipe(scratch);
  }
}

/**
 * One warning per literal family name the template asks for that is not
 * loaded (`known`), at the place of its first mention. Names are compared
 * as Typst compares them (case-insensitively), and never copied out.
 */
export function unknownFontWarnings(source: Uint8Array, known: FamilyNames): Warning[] {
  const warnings: Warning[] = [];
  const warned: Buffer[] = [];
  forEachFontLiteral(source, ({ at, name }) => {
    if (known.has(name, 0, name.length)) return;
    const lower = ownedBuffer(name.length);
    name.copy(lower);
    for (let i = 0; i < lower.length; i++) if (lower[i]! >= 0x41 && lower[i]! <= 0x5a) lower[i] = lower[i]! + 0x20;
    if (warned.some((w) => w.equals(lower))) {
      wipe(lower);
      return;
    }
    warned.push(lower);
    warnings.push({ message: UNKNOWN_FONT, ...placeOf(source, at) });
  });
  for (const w of warned) wipe(w);
  return warnings;
}
