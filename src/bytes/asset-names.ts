/**
 * The rules for an asset's name: a relative path as Typst takes it, minus
 * what must never be. Any printable Unicode (spaces included) in segments
 * joined by `/`; no `.` or `..` segment, no empty segment, no leading `/`,
 * no backslash, no control character (C0, DEL, C1), valid UTF-8, at most
 * 255 bytes; and no leading `~`, which the service's own files (the main
 * file, the data) hold, so no asset can shadow or read them. Checked on the
 * name's bytes (after JSON unescaping, or as a form's file name); the name
 * never becomes a string here.
 */
import { isUtf8 } from 'node:buffer';
import { ASSET_NAME_PROBLEMS, assetNameTooLong } from '../messages.js';
import { BACKSLASH, DOT, SLASH, TILDE } from './ascii.js';

export const MAX_ASSET_NAME = 255;

/** What is wrong with the name in `bytes[from, to)` (unescaped), or null. */
export function nameProblem(bytes: Uint8Array, from = 0, to = bytes.length): string | null {
  if (to === from) return ASSET_NAME_PROBLEMS.empty;
  if (bytes[from] === SLASH) return ASSET_NAME_PROBLEMS.absolute;
  if (bytes[from] === TILDE) return ASSET_NAME_PROBLEMS.reserved;
  let segmentStart = from;
  for (let i = from; i <= to; i++) {
    const b = i < to ? bytes[i]! : SLASH;
    if (b === SLASH) {
      const length = i - segmentStart;
      if (length === 0) return ASSET_NAME_PROBLEMS.emptySegment;
      if (
        (length === 1 && bytes[segmentStart] === DOT) ||
        (length === 2 && bytes[segmentStart] === DOT && bytes[segmentStart + 1] === DOT)
      ) {
        return ASSET_NAME_PROBLEMS.dotSegment;
      }
      segmentStart = i + 1;
    } else if (b === BACKSLASH) {
      return ASSET_NAME_PROBLEMS.backslash;
    } else if (b < 0x20 || b === 0x7f || (b === 0xc2 && i + 1 < to && bytes[i + 1]! >= 0x80 && bytes[i + 1]! <= 0x9f)) {
      // C0 controls and DEL as bytes; C1 controls (U+0080 to U+009F) as UTF-8's C2 80 to C2 9F.
      return ASSET_NAME_PROBLEMS.control;
    }
  }
  if (!isUtf8(bytes.subarray(from, to))) return ASSET_NAME_PROBLEMS.notUtf8;
  if (to - from > MAX_ASSET_NAME) return assetNameTooLong(MAX_ASSET_NAME);
  return null;
}
