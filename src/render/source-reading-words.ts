/**
 * Whether a template could make Typst parse a file as source: the main
 * file aside, Typst does so only for `import` and `include`, and code can
 * make an import out of a string only through `eval`, which it reaches by
 * that name or through `std`. A template in which none of these four is a
 * word can never have a mapped file parsed (engine.ts, TEXT_ENTRY).
 *
 * A word here is weaker than a Typst identifier, so that every identifier
 * is found: the match may not have an ASCII letter or digit after it, nor
 * an ASCII letter before it, unless that letter comes right after a
 * backslash or a non-ASCII byte; anything else bounds it. A Typst
 * identifier (in code: a letter, then letters, digits, `_` and `-`; in math
 * the same without `_` and `-`) cannot go on past such a bound with the word
 * inside it, and a number takes every letter after it. In math, which can
 * reach `std` (though not `eval`), a digit or `_` before the word bounds
 * it (`2std` is `2` then `std`), and so does a letter that math takes apart
 * from the word: an escape (`\astd` is `\a` then `std`) or a letter that
 * a character before it joins into one grapheme (`\u{600}astd`). Math
 * takes at most that one letter so.
 *
 * `import` and `include` are also English words ("prices include VAT"), and
 * as keywords they exist only in code. One that follows a word of ASCII
 * letters on its own line, across spaces and tabs only, is left out unless
 * that word is a keyword. Markup and math enter code only through `#`,
 * which the rule does not pass over, so such an `import` is in code only if
 * the letters end a code token: an identifier (or the end of one with `-`,
 * `_`, digits or other letters in it), a number's unit or digits (`1pt`,
 * `0xabc`). None of these may be followed by another expression on the
 * same line: in a block, an argument list or a statement after `#` that is a
 * syntax error, and Typst evaluates nothing of an `eval`'d string (the text
 * entry) with a syntax error; after a `#` expression that is no statement
 * (`#x include`) the code has ended at the space, and the keyword is text.
 * Otherwise the keyword is text in markup, in a comment or in a string.
 *
 * What it still finds besides (`eval` in prose, `include` at a line's
 * start) only costs the job a compiler made anew. Works on the template's
 * bytes (request content: it never becomes a string); linear in its length
 * (each word is looked for once through it, and each match looks back
 * across the spaces before it and at most nine letters).
 */
const KEYWORDS_IN_PROSE = ['import', 'include'].map((word) => Buffer.from(word));
const NAMES = ['eval', 'std'].map((word) => Buffer.from(word));

/** Typst's keywords: a word before `import` or `include` that is one of these does not make it prose. */
const TYPST_KEYWORDS = 'none auto true false not and or let set show context if else for in while break continue return import include as'
  .split(' ')
  .map((word) => Buffer.from(word));
/** The longest keyword: a longer word before the match is no keyword. */
const LONGEST_KEYWORD = 8;

const SPACE = 0x20;
const TAB = 0x09;
const BACKSLASH = 0x5c;
const isAsciiLetter = (byte: number) => (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
const isAsciiDigit = (byte: number) => byte >= 0x30 && byte <= 0x39;

/** Whether `source` holds `import` or `include` outside prose, or `eval` or `std`, as a word. */
export function mayReadSources(source: Uint8Array): boolean {
  const bytes = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  return (
    NAMES.some((word) => hasWord(bytes, word, () => true)) ||
    KEYWORDS_IN_PROSE.some((word) => hasWord(bytes, word, (at) => !afterProseWord(bytes, at)))
  );
}

/** Whether `word` is a word in `bytes` somewhere that `counts` (given where it starts). */
function hasWord(bytes: Buffer, word: Buffer, counts: (at: number) => boolean): boolean {
  for (let at = bytes.indexOf(word); at >= 0; at = bytes.indexOf(word, at + 1)) {
    const end = at + word.length;
    const boundedBefore =
      at === 0 || !isAsciiLetter(bytes[at - 1]!) || (at >= 2 && (bytes[at - 2] === BACKSLASH || bytes[at - 2]! >= 0x80));
    const boundedAfter = end === bytes.length || !(isAsciiLetter(bytes[end]!) || isAsciiDigit(bytes[end]!));
    if (boundedBefore && boundedAfter && counts(at)) return true;
  }
  return false;
}

/** Whether what comes before `at` on its line is a word of ASCII letters that is no Typst keyword, then only spaces and tabs. */
function afterProseWord(bytes: Buffer, at: number): boolean {
  let i = at;
  while (i > 0 && (bytes[i - 1] === SPACE || bytes[i - 1] === TAB)) i--;
  const wordEnd = i;
  if (wordEnd === at) return false;
  // Back over the word's letters, one more than the longest keyword at most.
  while (i > 0 && wordEnd - i <= LONGEST_KEYWORD && isAsciiLetter(bytes[i - 1]!)) i--;
  const length = wordEnd - i;
  if (length === 0) return false;
  if (length > LONGEST_KEYWORD) return true;
  // Compared in place: the word is request content and never becomes a string.
  return !TYPST_KEYWORDS.some((keyword) => keyword.length === length && bytes.compare(keyword, 0, length, i, wordEnd) === 0);
}
