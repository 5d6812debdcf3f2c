/**
 * When the service's message names a line and column of the template
 * ("... on line 12, column 5: ..."), shows that line of the local template
 * file with a caret under the column, as compilers do.
 */
import { templatePlace } from './template-place.js';

/** What Typst counts as a line break (typst-syntax's `is_newline`), CR LF as one. */
const LINE_BREAK = /\r\n|[\n\v\f\r\u0085\u2028\u2029]/;

/**
 * Characters a terminal shows two cells wide: the East Asian scripts, their
 * full-width forms and punctuation, and emoji shown as emoji. Unicode's
 * East_Asian_Width has no regular-expression property; this covers what
 * templates hold (CJK text, emoji) without a table of our own.
 */
const WIDE =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u3000-\u303f\uff01-\uff60\uffe0-\uffe6]|\p{Emoji_Presentation}/u;
/** Characters that take no cell of their own: combining marks and joiners. */
const ZERO_WIDTH = /[\p{Mn}\p{Me}\u200b-\u200f]/u;

export function templateExcerpt(message: string, template: string): string | undefined {
  const place = templatePlace(message);
  if (!place || place.column === null) return undefined;
  const line = template.split(LINE_BREAK)[place.line - 1];
  if (line === undefined) return undefined;
  const gutter = `${place.line} | `;
  // Typst counts the column in characters; tabs are kept so that the caret lines up with the text above it.
  const padding = [...line]
    .slice(0, Math.max(0, place.column - 1))
    .map((c) => (c === '\t' ? '\t' : ZERO_WIDTH.test(c) ? '' : WIDE.test(c) ? '  ' : ' '))
    .join('');
  return `${gutter}${line}\n${' '.repeat(gutter.length - 2)}| ${padding}^`;
}
