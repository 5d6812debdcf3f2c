/**
 * Asset values: base64 (standard alphabet) or a `data:` URL with `;base64`,
 * checked and decoded as bytes, straight into buffers the caller owns.
 *
 * The rules are WHATWG's "forgiving-base64 decode" (the one `atob` and
 * `data:` URLs use): ASCII whitespace is ignored; when the length is a
 * multiple of 4, one or two trailing `=` are dropped; a length of 4n + 1
 * is invalid; any character outside `A-Za-z0-9+/` is invalid. Hand-written
 * because Node decodes base64 only from strings, and leniently (it skips
 * what it does not understand): the property tests hold this to `atob`
 * and `Buffer.from(..., 'base64')`.
 */
import type { Range } from './layout.js';
import { withUnescaped } from './json-string.js';
import { ASSET_VALUE_PROBLEMS, invalidBase64 } from '../messages.js';
import { characterCount } from './text-position.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { EQUALS } from './ascii.js';

const ALPHABET = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');

/** Value of each base64 character; -1 for others, -2 for ASCII whitespace. */
const VALUES = new Int8Array(256).fill(-1);
for (const [i, c] of ALPHABET.entries()) VALUES[c] = i;
for (const b of [0x09, 0x0a, 0x0c, 0x0d, 0x20]) VALUES[b] = -2;

/** `data:` (any case) at `bytes[from]`. */
function isDataUrl(bytes: Uint8Array, from: number, to: number): boolean {
  return (
    to - from >= 5 &&
    (bytes[from]! | 0x20) === 0x64 &&
    (bytes[from + 1]! | 0x20) === 0x61 &&
    (bytes[from + 2]! | 0x20) === 0x74 &&
    (bytes[from + 3]! | 0x20) === 0x61 &&
    bytes[from + 4] === 0x3a
  );
}

/** Where the `data:` URL `bytes[from, to)`'s payload starts, or -1 if its header does not end with `;base64`. */
function dataUrlPayload(bytes: Uint8Array, from: number, to: number): number {
  let comma = from;
  while (comma < to && bytes[comma] !== 0x2c) comma++;
  if (comma === to) return -1;
  let end = comma;
  while (end > from + 5 && (bytes[end - 1] === 0x20 || bytes[end - 1] === 0x09)) end--;
  const suffix = ';base64';
  if (end - suffix.length < from + 5) return -1;
  for (let i = 0; i < suffix.length; i++) {
    const b = bytes[end - suffix.length + i]!;
    if ((i === 0 ? b : b | 0x20) !== suffix.charCodeAt(i)) return -1;
  }
  return comma + 1;
}

/** Where the base64 of an asset value `bytes[from, to)` starts: after a `data:` URL's header, if any; -1 for a data: URL that is not base64. */
export function payloadStart(bytes: Uint8Array, from: number, to: number): number {
  return isDataUrl(bytes, from, to) ? dataUrlPayload(bytes, from, to) : from;
}

/**
 * Checks forgiving base64 in `bytes[from, to)`: -1 if valid, else the index
 * (into `bytes`) of the first offending character.
 */
export function base64Invalid(bytes: Uint8Array, from = 0, to = bytes.length): number {
  let count = 0;
  let lastSignificant = -1;
  let secondLast = -1;
  // Characters that count, and where `=` may stand: only as the last one or two.
  for (let i = from; i < to; i++) {
    const value = VALUES[bytes[i]!]!;
    if (value === -2) continue;
    count++;
    secondLast = lastSignificant;
    lastSignificant = i;
  }
  let padding = 0;
  if (count % 4 === 0 && count > 0 && bytes[lastSignificant] === EQUALS) {
    padding = secondLast >= 0 && bytes[secondLast] === EQUALS ? 2 : 1;
  }
  const significant = count - padding;
  // A character outside the alphabet is the clearer thing to point at than a bad length.
  let seen = 0;
  for (let i = from; i < to && seen < significant; i++) {
    const value = VALUES[bytes[i]!]!;
    if (value === -2) continue;
    if (value === -1) return i;
    seen++;
  }
  return significant % 4 === 1 ? lastSignificant : -1;
}

/** What is wrong with an asset value (raw JSON string content `range` of `body`), or null. */
export function base64Problem(body: Uint8Array, range: Range): string | null {
  return withUnescaped(body, range, (value, from, to) => {
    const payload = payloadStart(value, from, to);
    if (payload < 0) return ASSET_VALUE_PROBLEMS.notBase64DataUrl;
    const bad = base64Invalid(value, payload, to);
    return bad < 0 ? null : invalidBase64(characterCount(value, from, bad) + 1);
  });
}

/** Decodes checked forgiving base64 from `bytes[from, to)` into a buffer of its own. */
export function decodeBase64(bytes: Uint8Array, from = 0, to = bytes.length): Buffer {
  let count = 0;
  for (let i = from; i < to; i++) if (VALUES[bytes[i]!]! >= 0) count++;
  const out = ownedBuffer(Math.floor((count * 3) / 4));
  let bits = 0;
  let held = 0;
  let o = 0;
  for (let i = from; i < to; i++) {
    const value = VALUES[bytes[i]!]!;
    if (value < 0) continue;
    bits = (bits << 6) | value;
    held += 6;
    if (held >= 8) {
      held -= 8;
      out[o++] = (bits >> held) & 0xff;
    }
  }
  return out;
}

/** Length of the base64 text of `bytes` bytes, with padding. */
export const base64Length = (bytes: number) => Math.ceil(bytes / 3) * 4;

/**
 * Writes `content` as padded base64 into `out` at `at`; returns the index
 * after it. Into a buffer the caller owns and wipes, where Node's encoder
 * would return a string.
 */
export function encodeBase64Into(content: Uint8Array, out: Uint8Array, at: number): number {
  let o = at;
  for (let i = 0; i < content.length; i += 3) {
    const a = content[i]!;
    const b = content[i + 1] ?? 0;
    const c = content[i + 2] ?? 0;
    out[o++] = ALPHABET[a >> 2]!;
    out[o++] = ALPHABET[((a & 3) << 4) | (b >> 4)]!;
    out[o++] = i + 1 < content.length ? ALPHABET[((b & 15) << 2) | (c >> 6)]! : EQUALS;
    out[o++] = i + 2 < content.length ? ALPHABET[c & 63]! : EQUALS;
  }
  return o;
}

/** An asset's content: its value (checked by base64Problem) unescaped, its data: header dropped, decoded. */
export function decodeAssetValue(body: Uint8Array, range: Range): Buffer {
  return withUnescaped(body, range, (value, from, to) => decodeBase64(value, payloadStart(value, from, to), to));
}

/**
 * The decoded bytes of checked base64 in `bytes[from, to)`, one at a time
 * and forward only, with no buffer: enough to read an image's header
 * without decoding the whole asset. Each character is looked at once.
 */
export class Base64Reader {
  private at: number;
  private bits = 0;
  /** How many low bits of `bits` are decoded and not yet read. */
  private held = 0;

  constructor(
    private readonly bytes: Uint8Array,
    from: number,
    private readonly to: number,
  ) {
    this.at = from;
  }

  /** The next byte, or -1 at the end. */
  next(): number {
    while (this.held < 8) {
      if (this.at >= this.to) return -1;
      const value = VALUES[this.bytes[this.at++]!]!;
      if (value < 0) continue; // whitespace, or the `=` of padding
      this.bits = ((this.bits << 6) | value) & 0x3fff;
      this.held += 6;
    }
    this.held -= 8;
    return (this.bits >> this.held) & 0xff;
  }

  /** Passes over `count` bytes; false if the end came first. */
  skip(count: number): boolean {
    if (count <= 8) {
      for (let i = 0; i < count; i++) if (this.next() < 0) return false;
      return true;
    }
    const need = count * 8 - this.held;
    if (need <= 0) {
      this.held = -need;
      return true;
    }
    let characters = Math.ceil(need / 6);
    const taken = characters;
    let last = 0;
    while (characters > 0) {
      if (this.at >= this.to) return false;
      const value = VALUES[this.bytes[this.at++]!]!;
      if (value < 0) continue;
      last = value;
      characters--;
    }
    this.bits = last;
    this.held = taken * 6 - need;
    return true;
  }
}
