/**
 * A request's signature text (reason, location, contact) as a PDF text
 * string (ISO 32000-1, 7.9.2.2), made from the body's bytes without a
 * JavaScript string: printable ASCII as a literal `(...)` (with `(`, `)` and
 * `\` escaped), anything else as UTF-16BE with its byte order mark, in hex.
 */
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';
import type { Range } from '../bytes/layout.js';
import { unescapeJsonString } from '../bytes/json-string.js';

const HEX = Buffer.from('0123456789ABCDEF');

/** The PDF string of the JSON string `range` of `body` (checked valid Unicode by the body check). An owned buffer: the caller wipes it. */
export function pdfTextString(body: Uint8Array, range: Range): Buffer {
  const utf8 = unescapeJsonString(body, range);
  try {
    return utf8.every((b) => b >= 0x20 && b <= 0x7e) ? literal(utf8) : utf16Hex(utf8);
  } finally {
    wipe(utf8);
  }
}

function literal(text: Uint8Array): Buffer {
  let escapes = 0;
  for (const b of text) if (b === 0x28 || b === 0x29 || b === 0x5c) escapes++;
  const out = ownedBuffer(text.length + escapes + 2);
  let at = 0;
  out[at++] = 0x28;
  for (const b of text) {
    if (b === 0x28 || b === 0x29 || b === 0x5c) out[at++] = 0x5c;
    out[at++] = b;
  }
  out[at] = 0x29;
  return out;
}

function utf16Hex(utf8: Uint8Array): Buffer {
  // At most one UTF-16 unit (4 hex digits) per byte of UTF-8, and the mark FEFF.
  const out = ownedBuffer(2 + 4 + utf8.length * 4);
  let at = 0;
  out[at++] = 0x3c;
  const unit = (u: number) => {
    for (let shift = 12; shift >= 0; shift -= 4) out[at++] = HEX[(u >> shift) & 0xf]!;
  };
  unit(0xfeff);
  for (let i = 0; i < utf8.length; ) {
    const b = utf8[i]!;
    const extra = b < 0x80 ? 0 : b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
    let code = extra === 0 ? b : b & (0x3f >> extra);
    for (let k = 1; k <= extra; k++) code = (code << 6) | (utf8[i + k]! & 0x3f);
    i += extra + 1;
    if (code >= 0x10000) {
      code -= 0x10000;
      unit(0xd800 | (code >> 10));
      unit(0xdc00 | (code & 0x3ff));
    } else unit(code);
  }
  out[at++] = 0x3e;
  return out.subarray(0, at);
}
