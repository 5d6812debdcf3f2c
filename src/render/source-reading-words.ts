import { AT, BACKSLASH, CR, HASH, LF, QUOTE, SPACE, TAB } from '../bytes/ascii.js';
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
 * An `import` of a package by its name alone (`#import "@preview/x:1.0.0": a`)
 * is left out too, when the operator's packages hand out no `eval`: see
 * importsPackage.
 *
 * What it still finds besides (`eval` in prose, `include` at a line's
 * start) only costs the job a compiler made anew. Works on the template's
 * bytes (request content: it never becomes a string); linear in its length
 * (each word is looked for once through it, and each match looks back
 * across the spaces before it and at most nine letters).
 */
const IMPORT = Buffer.from('import');
const INCLUDE = Buffer.from('include');
const NAMES = ['eval', 'std'].map((word) => Buffer.from(word));

/** Typst's keywords: a word before `import` or `include` that is one of these does not make it prose. */
const TYPST_KEYWORDS = 'none auto true false not and or let set show context if else for in while break continue return import include as'
  .split(' ')
  .map((word) => Buffer.from(word));
/** The longest keyword: a longer word before the match is no keyword. */
const LONGEST_KEYWORD = 8;

const isAsciiLetter = (byte: number) => (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a);
const isAsciiDigit = (byte: number) => byte >= 0x30 && byte <= 0x39;

/**
 * Whether `source` holds `eval` or `std`, `include` outside prose, or `import` outside prose, as a word; an
 * `import` of a package by its name alone is left out unless `packagesMayHandOutEval` (package-scan.ts).
 */
export function mayReadSources(source: Uint8Array, packagesMayHandOutEval = true): boolean {
  const bytes = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  return (
    namesEval(bytes) ||
    hasWord(bytes, INCLUDE, (at) => !afterProseWord(bytes, at)) ||
    hasWord(bytes, IMPORT, (at) => !afterProseWord(bytes, at) && (packagesMayHandOutEval || !importsPackage(bytes, at)))
  );
}

/** Whether `eval` or `std` is a word in `source`. */
export function namesEval(source: Uint8Array): boolean {
  const bytes = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  return NAMES.some((word) => hasWord(bytes, word, () => true));
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

/** What may follow an import's package name on its line: its items, the statement's end, or the end of its group or block. */
const AFTER_PACKAGE = new Set([0x3a, 0x3b, 0x7d, 0x5d, 0x29]);
const AS = Buffer.from('as');

/**
 * Whether the `import` at `at` imports a package and nothing else: a string that starts with `@` and holds
 * no backslash, quote or line break is all of what is imported. After it, on its line, only `:` (its items),
 * `as`, `;` or a closing bracket, or the end of the text; or the end of the line right after `#import`,
 * where an embedded statement ends (inside brackets or a block a line break does not end the expression,
 * and `"@x"⏎.slice(1)` would make it a path). Typst reads such a string as a package's name; a package's
 * files are the operator's, and its code resolves every path inside the package, so importing one parses
 * no file of the request unless a package hands out `eval` (package-scan.ts). Anything else after the
 * string (`.replace(..)`, `+`) could make it a path, and counts.
 */
function importsPackage(bytes: Buffer, at: number): boolean {
  let i = at + IMPORT.length;
  while (i < bytes.length && (bytes[i] === SPACE || bytes[i] === TAB)) i++;
  if (bytes[i] !== QUOTE || bytes[i + 1] !== AT) return false;
  for (i += 2; i < bytes.length && bytes[i] !== QUOTE; i++) {
    if (bytes[i] === BACKSLASH || bytes[i] === LF || bytes[i] === CR) return false;
  }
  if (i >= bytes.length) return false;
  i++;
  while (i < bytes.length && (bytes[i] === SPACE || bytes[i] === TAB)) i++;
  if (i === bytes.length || AFTER_PACKAGE.has(bytes[i]!)) return true;
  if (bytes[i] === LF || bytes[i] === CR) return at > 0 && bytes[at - 1] === HASH;
  const end = i + AS.length;
  return end < bytes.length && bytes.compare(AS, 0, AS.length, i, end) === 0 && (bytes[end] === SPACE || bytes[end] === TAB);
}
