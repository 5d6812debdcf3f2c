/**
 * When the service's message names a line and column of the template
 * ("... on line 12, column 5: ..."), shows that line of the local template
 * file with a caret under the column, as compilers do.
 */
import { templatePlace } from './template-place.js';

/** What Typst counts as a line break (typst-syntax's `is_newline`), CR LF as one. */
const LINE_BREAK = /\r\n|[\n\v\f\r\u0085\u2028\u2029]/;

/**
 * Characters a terminal shows two cells wide: the East Asian scripts (not
 * their half-width forms), full-width forms and CJK punctuation. Unicode's
 * East_Asian_Width has no regular-expression property; this covers what
 * templates hold (CJK text) without a table of our own.
 */
const WIDE = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff01-\uff60\uffe0-\uffe6]/u;
const HALF_WIDTH = /[\uff61-\uffdc\uffe8-\uffee]/u;
/** Emoji shown as emoji: by default, with U+FE0F after it, or a flag (two regional indicators). */
const EMOJI = /\p{Emoji_Presentation}|\ufe0f|\p{Regional_Indicator}/u;
/** A character cluster that takes no cell of its own: combining marks and zero-width characters. */
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\u200b-\u200f]+$/u;

/** The cells a terminal gives one character cluster; a tab stays a tab, so that the caret lines up below it. */
function cells(cluster: string): string {
  if (cluster === '\t') return '\t';
  if (ZERO_WIDTH.test(cluster)) return '';
  if (EMOJI.test(cluster) || (WIDE.test(cluster) && !HALF_WIDTH.test(cluster))) return '  ';
  return ' ';
}

const clusters = new Intl.Segmenter();

export function templateExcerpt(message: string, template: string): string | undefined {
  const place = templatePlace(message);
  if (!place || place.column === null) return undefined;
  const line = template.split(LINE_BREAK)[place.line - 1];
  if (line === undefined) return undefined;
  const gutter = `${place.line} | `;
  // Typst counts the column in characters (code points); the terminal shows clusters of them.
  const before = [...line].slice(0, Math.max(0, place.column - 1)).join('');
  const padding = Array.from(clusters.segment(before), ({ segment }) => cells(segment)).join('');
  return `${gutter}${line}\n${' '.repeat(gutter.length - 2)}| ${padding}^`;
}
