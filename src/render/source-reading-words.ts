/**
 * Whether a template could make Typst parse a file as source: the main
 * file aside, Typst does so only for `import` and `include`, and code can
 * make an import out of a string only through `eval`, which it reaches by
 * that name or through `std`. A template in which none of these four is a
 * word can never have a mapped file parsed (engine.ts, TEXT_ENTRY).
 *
 * A word here is weaker than a Typst identifier, so that every identifier
 * is found: the match may not have an ASCII letter before it nor an ASCII
 * letter or digit after it, and anything else bounds it. A Typst identifier
 * (in code: a letter, then letters, digits, `_` and `-`; in math the same
 * without `_` and `-`) cannot continue past such a bound with the word inside
 * it, so each identifier `eval` is such a word; and a digit or `_` before
 * it counts as a bound, since math reads `2eval(..)` as `2` then `eval`.
 * What it finds besides (`import-ant` in code, `eval` in prose) only costs
 * the job a compiler made anew; what it no longer finds is the words that
 * merely contain one (`important`, `including`, `evaluation`), which made
 * one in many letters and invoices.
 *
 * Works on the template's bytes (request content: it never becomes a string);
 * linear in the template's length (each word is looked for once through it).
 */
const WORDS = ['import', 'include', 'eval', 'std'].map((word) => Buffer.from(word));

const isAsciiLetter = (byte: number) => (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
const isAsciiDigit = (byte: number) => byte >= 0x30 && byte <= 0x39;

/** Whether `source` holds `import`, `include`, `eval` or `std` as a word. */
export function mayReadSources(source: Uint8Array): boolean {
  const bytes = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  for (const word of WORDS) {
    for (let at = bytes.indexOf(word); at >= 0; at = bytes.indexOf(word, at + 1)) {
      const end = at + word.length;
      const boundedBefore = at === 0 || !isAsciiLetter(bytes[at - 1]!);
      const boundedAfter = end === bytes.length || !(isAsciiLetter(bytes[end]!) || isAsciiDigit(bytes[end]!));
      if (boundedBefore && boundedAfter) return true;
    }
  }
  return false;
}
