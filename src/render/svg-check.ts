/**
 * What an SVG asset holds that crashes the engines, found before they read
 * it (docs/engine-crashes.md):
 *
 * - Elements nested deeper than both engines' SVG parser reads. It refuses
 *   more than SVG_DEPTH_LIMIT levels (root included) with "nodes limit
 *   reached", but about 80,000 deep the worker's stack overflows before
 *   that check. svgDepth counts the levels as the parser does, so the
 *   service refuses exactly what Typst would.
 * - Raster images in `data:` URLs (the service's own inlining of linked
 *   assets makes those too, svg-links.ts): Typst 0.11's PDF export decodes
 *   them with an `unwrap()` and so dies on one it cannot decode, where an
 *   image Typst itself reads is its 400. rasterImages finds them for the
 *   engine to try first (engine.ts).
 *
 * Hand-written and byte by byte, in one pass each (no XML parser: only the
 * tags' nesting and the href values are looked at, and no part of an SVG
 * becomes a string).
 */
import { APOSTROPHE, QUOTE, SLASH } from '../bytes/ascii.js';
import { decodeBase64, payloadStart } from '../bytes/base64.js';
import { wipe } from '../retention/wipe.js';

/** Element levels the engines' SVG parser reads, the root counting as one. */
export const SVG_DEPTH_LIMIT = 1025;

const LT = 0x3c;
const GT = 0x3e;
const BANG = 0x21;
const QUESTION = 0x3f;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMENT_END = Buffer.from('-->');
const CDATA_START = Buffer.from('<![CDATA[');
const CDATA_END = Buffer.from(']]>');
const PI_END = Buffer.from('?>');
const GIF = Buffer.from('GIF8');

const startsWith = (bytes: Buffer, at: number, prefix: Buffer) => bytes.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0;

/** Where the markup item that starts with `<` at `at` ends (the index after it), skipping quoted values. */
function endOfTag(bytes: Buffer, at: number): number {
  let quote = 0;
  for (let i = at + 1; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (quote !== 0) {
      if (b === quote) quote = 0;
    } else if (b === QUOTE || b === APOSTROPHE) quote = b;
    else if (b === GT) return i + 1;
  }
  return bytes.length;
}

/**
 * The end of a `<!...>` declaration: a DOCTYPE with its internal subset in
 * brackets, whose quoted values, comments and processing instructions are
 * skipped.
 */
function endOfDeclaration(bytes: Buffer, at: number): number {
  let quote = 0;
  let brackets = 0;
  for (let i = at + 2; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (quote !== 0) {
      if (b === quote) quote = 0;
    } else if (b === QUOTE || b === APOSTROPHE) quote = b;
    else if (b === LT && bytes[i + 1] === BANG && bytes[i + 2] === 0x2d && bytes[i + 3] === 0x2d) i = after(bytes, COMMENT_END, i + 4) - 1;
    else if (b === LT && bytes[i + 1] === QUESTION) i = after(bytes, PI_END, i + 2) - 1;
    else if (b === OPEN_BRACKET) brackets++;
    else if (b === CLOSE_BRACKET) brackets--;
    else if (b === GT && brackets <= 0) return i + 1;
  }
  return bytes.length;
}

/** The index after `end` found from `from`, or the end of `bytes`. */
function after(bytes: Buffer, end: Buffer, from: number): number {
  const at = bytes.indexOf(end, from);
  return at < 0 ? bytes.length : at + end.length;
}

/**
 * How deep the elements of `bytes` nest (the root is level 1), counted up
 * to `stopAbove` + 1 at most: comments, CDATA, processing instructions and
 * declarations hold no element.
 */
export function svgDepth(bytes: Buffer, stopAbove = SVG_DEPTH_LIMIT): number {
  let depth = 0;
  let deepest = 0;
  for (let at = bytes.indexOf(LT); at >= 0 && at < bytes.length; at = bytes.indexOf(LT, at)) {
    const next = bytes[at + 1];
    if (next === BANG) {
      if (bytes[at + 2] === 0x2d && bytes[at + 3] === 0x2d) at = after(bytes, COMMENT_END, at + 4);
      else if (startsWith(bytes, at, CDATA_START)) at = after(bytes, CDATA_END, at + CDATA_START.length);
      else at = endOfDeclaration(bytes, at);
    } else if (next === QUESTION) {
      at = after(bytes, PI_END, at + 2);
    } else if (next === SLASH) {
      depth--;
      at = endOfTag(bytes, at);
    } else {
      // An element one level down; an empty-element tag (`<g/>`) is one too, but holds none below it.
      const end = endOfTag(bytes, at);
      if (depth + 1 > deepest) deepest = depth + 1;
      if (deepest > stopAbove) return deepest;
      if (bytes[end - 2] !== SLASH || bytes[end - 1] !== GT) depth++;
      at = end;
    }
  }
  return deepest;
}

/** Whether `bytes` start as markup does (`<`, after a byte order mark and white space): an SVG under any name. */
export function looksLikeMarkup(bytes: Buffer): boolean {
  let at = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  while (at < bytes.length && (bytes[at] === 0x20 || bytes[at] === 0x09 || bytes[at] === 0x0a || bytes[at] === 0x0d)) at++;
  return bytes[at] === LT;
}

export type RasterFormat = 'png' | 'jpg' | 'gif';

/** The raster format `bytes` start with, by their signature. */
function rasterFormat(bytes: Buffer): RasterFormat | undefined {
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.readUInt32BE(4) === 0x0d0a1a0a) return 'png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpg';
  if (bytes.length >= 6 && startsWith(bytes, 0, GIF) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return 'gif';
  return undefined;
}

const HREF = Buffer.from('href=');

/**
 * Each raster image (PNG, JPEG, GIF: what 0.11 draws) in a base64 `data:`
 * URL of an `href` or `xlink:href`, decoded into a buffer of its own that
 * `visit` may use until it returns (it is wiped then). Stops at the first
 * image `visit` returns true for.
 */
export function someRasterImage(bytes: Buffer, visit: (image: Buffer, format: RasterFormat) => boolean): boolean {
  for (let at = bytes.indexOf(HREF); at >= 0; at = bytes.indexOf(HREF, at + HREF.length)) {
    const quote = bytes[at + HREF.length];
    if (quote !== QUOTE && quote !== APOSTROPHE) continue;
    const start = at + HREF.length + 1;
    const end = bytes.indexOf(quote, start);
    if (end < 0) return false;
    const payload = payloadStart(bytes, start, end);
    if (payload === start || payload < 0) continue;
    const image = decodeBase64(bytes, payload, end);
    try {
      const format = rasterFormat(image);
      if (format && visit(image, format)) return true;
    } finally {
      wipe(image);
    }
    at = end;
  }
  return false;
}
