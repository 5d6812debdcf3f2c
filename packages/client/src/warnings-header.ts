/**
 * Reads `X-Typst-Warnings`. The service writes the count, then each warning
 * (`line N, column C: message`) separated by ` | `, with every character
 * outside printable ASCII, and the backslash, as `\uXXXX`, the hex of its
 * UTF-16 code unit (a header carries ASCII only; a character beyond U+FFFF
 * is two escapes).
 * Decoding the escapes one code unit at a time gives back the text the
 * service worded.
 */

const COUNT = /^\d+; /;
const ESCAPE = /\\u([0-9a-fA-F]{4})/g;

/** `X-Typst-Warnings: <count>; <warning> | <warning>` as a list, its `\uXXXX` escapes decoded. */
export function parseWarnings(header: string | null): string[] {
  if (!header) return [];
  const list = header.replace(COUNT, '');
  if (list === '') return [];
  return list.split(' | ').map((warning) => warning.replace(ESCAPE, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))));
}
