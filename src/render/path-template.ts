/**
 * A template that is one word ending in `.typ` is most likely a file's path
 * sent where the file's contents belong: `curl -F template=letter.typ`,
 * without the `@`. It compiles, to a page that shows the path, so it is a
 * warning and not a refusal. The check reads the bytes: a template never
 * becomes a JavaScript string (docs/retention.md).
 */
import type { Warning } from '../api-values.js';
import { TEMPLATE_IS_A_PATH } from '../messages.js';
import { HASH } from '../bytes/ascii.js';

const SUFFIX = Buffer.from('.typ');
/** Longer than any path a client would send by mistake. */
const MAX_PATH_BYTES = 4096;
/** ASCII letters in lower case; other bytes of the suffix ('.') are unchanged by it. */
const LOWER_CASE = 0x20;

/** Whether `source` is one word (no space, no control character) ending in `.typ`, in any case, and no Typst code. */
export function isPathLike(source: Uint8Array): boolean {
  if (source.length <= SUFFIX.length || source.length > MAX_PATH_BYTES || source[0] === HASH) return false;
  for (const byte of source) if (byte <= 0x20 || byte === 0x7f) return false;
  const tail = source.length - SUFFIX.length;
  return SUFFIX.every((byte, i) => (source[tail + i]! | LOWER_CASE) === byte);
}

/** The warning for a template that looks like a file's path, if it does. */
export function pathTemplateWarnings(source: Uint8Array): Warning[] {
  return isPathLike(source) ? [{ line: null, message: TEMPLATE_IS_A_PATH }] : [];
}
