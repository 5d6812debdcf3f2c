/**
 * The rules for an asset's name (DESIGN.md, "Assets"): a relative path of
 * segments of `A-Za-z0-9._-` joined by `/`, no `.` or `..` segment, no
 * leading `/`, no empty segment, at most 255 characters. Checked on the
 * name's bytes after JSON unescaping; the name never becomes a string here.
 */
import { ASSET_NAME_PROBLEMS, assetNameTooLong } from '../messages.js';

export const MAX_ASSET_NAME = 255;

const SLASH = 0x2f;
const DOT = 0x2e;

/** A byte a path segment of a name may hold: `A-Za-z0-9._-`. */
export const isNameCharacter = (b: number) =>
  (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || (b >= 0x30 && b <= 0x39) || b === DOT || b === 0x5f || b === 0x2d;

/** What is wrong with the name in `bytes[from, to)` (unescaped), or null. */
export function nameProblem(bytes: Uint8Array, from = 0, to = bytes.length): string | null {
  if (to === from) return ASSET_NAME_PROBLEMS.empty;
  if (bytes[from] === SLASH) return ASSET_NAME_PROBLEMS.absolute;
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
    } else if (!isNameCharacter(b)) {
      return ASSET_NAME_PROBLEMS.character;
    }
  }
  if (to - from > MAX_ASSET_NAME) return assetNameTooLong(MAX_ASSET_NAME);
  return null;
}
