/**
 * What an SVG asset holds that crashes the engines, found before they read
 * it (docs/engine-crashes.md). A check of what a client sends by mistake
 * (a corrupt logo), not a boundary against a key that means harm: that is
 * the crash limit's (http/crash-limit.ts), and the docs list what is
 * beyond this check.
 *
 * - Elements nested deeper than both engines' SVG parser reads. It refuses
 *   more than SVG_DEPTH_LIMIT levels (root included) with "nodes limit
 *   reached", but about 80,000 deep the worker's stack overflows before
 *   that check. svgDepth counts the levels as the parser does, so the
 *   service refuses exactly what Typst would.
 * - PNG and GIF images in `data:` URLs (the service's own inlining of
 *   linked assets makes those too, svg-links.ts): Typst 0.11's PDF export
 *   decodes them with an `unwrap()` and so dies on one it cannot decode
 *   (a JPEG it embeds as it is), where an image Typst itself reads is its
 *   400. rasterImages finds them, read as an XML parser and a URL parser
 *   read them, for the engine to try first (engine.ts).
 *
 * Hand-written and byte by byte, in one pass each (no XML parser: only the
 * tags' nesting and the href values are looked at, and no part of an SVG
 * becomes a string).
 */
import {
  AMPERSAND,
  APOSTROPHE,
  BANG,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  CR,
  DASH,
  EQUALS,
  GREATER_THAN,
  HASH,
  isXmlSpace,
  LESS_THAN,
  LF,
  OPEN_BRACKET,
  PERCENT,
  QUESTION,
  QUOTE,
  SEMICOLON,
  SLASH,
  SPACE,
  TAB,
} from '../bytes/ascii.js';
import { base64Invalid, decodeBase64 } from '../bytes/base64.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';

/** Element levels the engines' SVG parser reads, the root counting as one. */
export const SVG_DEPTH_LIMIT = 1025;

const COMMENT_END = Buffer.from('-->');
const CDATA_START = Buffer.from('<![CDATA[');
const CDATA_END = Buffer.from(']]>');
const PI_END = Buffer.from('?>');
const GIF = Buffer.from('GIF8');
const HREF = Buffer.from('href');
const DATA = Buffer.from('data:');
const BASE64 = Buffer.from('base64');

const startsWith = (bytes: Buffer, at: number, prefix: Buffer) => bytes.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0;

/** Where the markup item that starts with `<` at `at` ends (the index after it), skipping quoted values. */
function endOfTag(bytes: Buffer, at: number): number {
  let quote = 0;
  for (let i = at + 1; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (quote !== 0) {
      if (b === quote) quote = 0;
    } else if (b === QUOTE || b === APOSTROPHE) quote = b;
    else if (b === GREATER_THAN) return i + 1;
  }
  return bytes.length;
}

/** The index after `end` found from `from`, or the end of `bytes`. */
function after(bytes: Buffer, end: Buffer, from: number): number {
  const at = bytes.indexOf(end, from);
  return at < 0 ? bytes.length : at + end.length;
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
    else if (b === LESS_THAN && bytes[i + 1] === BANG && bytes[i + 2] === DASH && bytes[i + 3] === DASH)
      i = after(bytes, COMMENT_END, i + 4) - 1;
    else if (b === LESS_THAN && bytes[i + 1] === QUESTION) i = after(bytes, PI_END, i + 2) - 1;
    else if (b === OPEN_BRACKET) brackets++;
    else if (b === CLOSE_BRACKET) brackets--;
    else if (b === GREATER_THAN && brackets <= 0) return i + 1;
  }
  return bytes.length;
}

/**
 * Walks the tags of `bytes` in order: `start(at, end, empty)` for each
 * start or empty-element tag `bytes[at, end)` (stopping when it returns
 * true), `close()` for each end tag. Comments, CDATA, processing
 * instructions and declarations are passed over.
 */
function walkTags(bytes: Buffer, start: (at: number, end: number, empty: boolean) => boolean, close: () => void): void {
  for (let at = bytes.indexOf(LESS_THAN); at >= 0 && at < bytes.length; at = bytes.indexOf(LESS_THAN, at)) {
    const next = bytes[at + 1];
    if (next === BANG) {
      if (bytes[at + 2] === DASH && bytes[at + 3] === DASH) at = after(bytes, COMMENT_END, at + 4);
      else if (startsWith(bytes, at, CDATA_START)) at = after(bytes, CDATA_END, at + CDATA_START.length);
      else at = endOfDeclaration(bytes, at);
    } else if (next === QUESTION) {
      at = after(bytes, PI_END, at + 2);
    } else if (next === SLASH) {
      close();
      at = endOfTag(bytes, at);
    } else {
      const end = endOfTag(bytes, at);
      if (start(at, end, bytes[end - 2] === SLASH && bytes[end - 1] === GREATER_THAN)) return;
      at = end;
    }
  }
}

/**
 * How deep the elements of `bytes` nest (the root is level 1; an
 * empty-element tag is a level too), counted up to `stopAbove` + 1 at
 * most. Entities are not expanded: markup an entity declaration holds is
 * beyond the count.
 */
export function svgDepth(bytes: Buffer, stopAbove = SVG_DEPTH_LIMIT): number {
  let depth = 0;
  let deepest = 0;
  walkTags(
    bytes,
    (_at, _end, empty) => {
      deepest = Math.max(deepest, depth + 1);
      if (!empty) depth++;
      return deepest > stopAbove;
    },
    () => depth--,
  );
  return deepest;
}

export type RasterFormat = 'png' | 'gif';

/** The format 0.11's SVG export decodes that `bytes` start as, by its signature. */
function rasterFormat(bytes: Buffer): RasterFormat | undefined {
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.readUInt32BE(4) === 0x0d0a1a0a) return 'png';
  if (bytes.length >= 6 && startsWith(bytes, 0, GIF) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61) return 'gif';
  return undefined;
}

/** Calls `visit` with each value `[start, end)` of an attribute named `href` or `<prefix>:href` in the start tag `bytes[at, end)`. */
function hrefValues(bytes: Buffer, at: number, end: number, visit: (start: number, end: number) => boolean): boolean {
  let i = at + 1;
  // The element's name.
  while (i < end && !isXmlSpace(bytes[i]) && bytes[i] !== SLASH && bytes[i] !== GREATER_THAN) i++;
  while (i < end) {
    while (i < end && isXmlSpace(bytes[i])) i++;
    const nameStart = i;
    while (i < end && !isXmlSpace(bytes[i]) && bytes[i] !== EQUALS && bytes[i] !== SLASH && bytes[i] !== GREATER_THAN) i++;
    const nameEnd = i;
    while (i < end && isXmlSpace(bytes[i])) i++;
    if (bytes[i] !== EQUALS) {
      if (i === nameStart) i++;
      continue;
    }
    i++;
    while (i < end && isXmlSpace(bytes[i])) i++;
    const quote = bytes[i];
    if (quote !== QUOTE && quote !== APOSTROPHE) continue;
    const valueStart = i + 1;
    const valueEnd = bytes.indexOf(quote, valueStart);
    if (valueEnd < 0 || valueEnd >= end) return false;
    i = valueEnd + 1;
    const named = nameEnd - nameStart >= HREF.length && startsWith(bytes, nameEnd - HREF.length, HREF);
    const prefixed = nameEnd - nameStart === HREF.length || bytes[nameEnd - HREF.length - 1] === COLON;
    if (named && prefixed && visit(valueStart, valueEnd)) return true;
  }
  return false;
}

/** The longest character reference and predefined entity, `&` included: `&#x10FFFF;`, `&#1114111;`. */
const REFERENCE_MAX = 11;

const PREDEFINED: [Buffer, number][] = [
  [Buffer.from('lt;'), LESS_THAN],
  [Buffer.from('gt;'), GREATER_THAN],
  [Buffer.from('amp;'), AMPERSAND],
  [Buffer.from('quot;'), QUOTE],
  [Buffer.from('apos;'), APOSTROPHE],
];

/**
 * An attribute value as an XML parser reads it, then as a URL parser takes
 * it: white space made spaces, character references and the predefined
 * entities expanded (others left as they are), tabs and line breaks that
 * references made dropped, control characters and spaces trimmed from
 * both ends. Into a buffer of its own.
 */
function urlOfValue(bytes: Buffer, start: number, end: number): { buffer: Buffer; url: Buffer } {
  const out = ownedBuffer(end - start);
  let o = 0;
  // A character the value names by reference: a URL parser drops tabs and line breaks.
  const put = (b: number) => {
    if (b !== TAB && b !== LF && b !== CR) out[o++] = b;
  };
  for (let i = start; i < end; i++) {
    const b = bytes[i]!;
    if (b !== AMPERSAND) {
      // White space written as such is a space to an XML parser.
      out[o++] = isXmlSpace(b) ? SPACE : b;
      continue;
    }
    // A character reference is short (`&#x10FFFF;`): looked for that far, so that a run of `&` costs one pass.
    let semicolon = -1;
    for (let j = i + 1; j < Math.min(end, i + REFERENCE_MAX); j++) {
      if (bytes[j] === SEMICOLON) {
        semicolon = j;
        break;
      }
    }
    if (semicolon > 0 && bytes[i + 1] === HASH) {
      const hex = (bytes[i + 2]! | 0x20) === 0x78;
      const code = referencedCode(bytes, i + (hex ? 3 : 2), semicolon, hex ? 16 : 10);
      // A character reference; the URL's own bytes are ASCII, and nothing past it matters here.
      if (code >= 0 && code < 0x80) {
        put(code);
        i = semicolon;
        continue;
      }
    }
    const entity = PREDEFINED.find(([name]) => startsWith(bytes, i + 1, name));
    if (entity) {
      put(entity[1]);
      i += entity[0].length;
    } else put(b);
  }
  let from = 0;
  let to = o;
  while (from < to && out[from]! <= SPACE) from++;
  while (to > from && out[to - 1]! <= SPACE) to--;
  return { buffer: out, url: out.subarray(from, to) };
}

/** The number `bytes[from, to)` writes in `radix` (10 or 16), or -1; read byte by byte. */
function referencedCode(bytes: Buffer, from: number, to: number, radix: number): number {
  let code = 0;
  for (let i = from; i < to; i++) {
    const digit = hexValue(bytes[i]!);
    if (digit < 0 || digit >= radix || code > 0x10ffff) return -1;
    code = code * radix + digit;
  }
  return to > from ? code : -1;
}

const hexValue = (b: number) => (b >= 0x30 && b <= 0x39 ? b - 0x30 : (b | 0x20) >= 0x61 && (b | 0x20) <= 0x66 ? (b | 0x20) - 0x57 : -1);

/**
 * The body of a `data:` URL as the Fetch standard's data URL processor
 * reads it: percent-decoded, then base64-decoded when its type ends in
 * `;base64` (spaces allowed after the `;`, any case); undefined for another
 * URL, or base64 that does not decode. Into a buffer of its own.
 */
function dataUrlBody(url: Buffer): Buffer | undefined {
  if (url.length < DATA.length || !DATA.every((c, i) => (url[i]! | (i < 4 ? 0x20 : 0)) === c)) return undefined;
  const comma = url.indexOf(COMMA, DATA.length);
  if (comma < 0) return undefined;
  let typeEnd = comma;
  while (typeEnd > DATA.length && url[typeEnd - 1]! <= SPACE) typeEnd--;
  let base64 = typeEnd - BASE64.length >= DATA.length && BASE64.every((c, i) => (url[typeEnd - BASE64.length + i]! | 0x20) === c);
  if (base64) {
    let semicolon = typeEnd - BASE64.length - 1;
    while (semicolon >= DATA.length && url[semicolon] === SPACE) semicolon--;
    base64 = url[semicolon] === SEMICOLON;
  }
  const body = ownedBuffer(url.length - comma - 1);
  let o = 0;
  for (let i = comma + 1; i < url.length; i++) {
    const high = url[i] === PERCENT ? hexValue(url[i + 1] ?? 0) : -1;
    const low = high >= 0 ? hexValue(url[i + 2] ?? 0) : -1;
    if (low >= 0) {
      body[o++] = high * 16 + low;
      i += 2;
    } else body[o++] = url[i]!;
  }
  if (!base64) return body.subarray(0, o);
  try {
    return base64Invalid(body, 0, o) < 0 ? decodeBase64(body, 0, o) : undefined;
  } finally {
    wipe(body);
  }
}

export interface RasterImage {
  format: RasterFormat;
  /** Its bytes, in a buffer of their own that the caller wipes. */
  bytes: Buffer;
}

/**
 * Each PNG or GIF image of a `data:` URL in an `href` or `xlink:href` of a
 * start tag (not in a comment or CDATA), decoded.
 */
export function rasterImages(bytes: Buffer): RasterImage[] {
  const images: RasterImage[] = [];
  walkTags(
    bytes,
    (at, end) =>
      hrefValues(bytes, at, end, (start, stop) => {
        const { buffer, url } = urlOfValue(bytes, start, stop);
        const image = dataUrlBody(url);
        wipe(buffer);
        const format = image && rasterFormat(image);
        if (format) images.push({ format, bytes: image! });
        else if (image) wipe(image);
        return false;
      }),
    () => undefined,
  );
  return images;
}
