/**
 * Where a large `data` object ends, found from the end of the body without
 * reading the object itself.
 *
 * Typst's `json()` reads `data` again in the worker, and checks it as it
 * does (serde_json, which accepts less than `JSON.parse`: no unpaired
 * surrogate escapes, no control characters, no trailing bytes). Reading
 * 9 MB of it in the server first only to find its last byte cost about as
 * much as the compile of a document that prints a few of its fields. So for
 * a large body the check reads the top-level object up to `data`, and takes
 * the rest from the back: the members after `data` are walked backward
 * (strings, numbers, literals and objects of those, which is all that a
 * template, assets, typst or pdf can be), and the first object that holds
 * more than that is taken to be `data`.
 *
 * That is a guess, and it is safe: the members after it are then checked
 * forward as always (json-check.ts), and the guessed range goes to Typst as
 * the data file. A JSON text that starts at `data`'s `{` and parses whole
 * ends at that brace's match, so if Typst reads the range, the guess was
 * right and `data` is valid JSON. If it does not, the worker checks the body
 * exactly (render/job-run.ts) and answers what the server would have: the
 * 400 of the first fault, or a compile with the true layout.
 */
import { BACKSLASH, CLOSE_BRACKET, CLOSE_BRACE, COLON, COMMA, OPEN_BRACE, QUOTE } from './ascii.js';

/** The walk gave up: the body is not of the common shape, and is checked exactly. */
const GIVE_UP = -1;
/** The object ending here holds an object or an array: it is taken to be `data`. */
const NOT_PLAIN = -2;

const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/** The last index at or before `i` that is not JSON whitespace (-1 if none). */
function back(body: Uint8Array, i: number): number {
  let j = i;
  while (j >= 0 && isSpace(body[j])) j--;
  return j;
}

/**
 * The opening quote of the string whose closing quote is at `close`, or -1.
 * A quote is a string's edge when an even number of backslashes precede it.
 * A byte loop, not lastIndexOf: a template of escaped quotes would make that
 * a native call per quote. Each byte is looked at once or twice: linear.
 */
function stringStart(body: Uint8Array, close: number): number {
  let j = close - 1;
  for (;;) {
    while (j >= 0 && body[j] !== QUOTE) j--;
    if (j < 0) return -1;
    let k = j - 1;
    while (k >= 0 && body[k] === BACKSLASH) k--;
    if ((j - 1 - k) % 2 === 0) return j;
    j = k;
  }
}

/** Bytes a number or a literal (true, false, null) is made of. */
const SCALAR = new Uint8Array(256);
for (const b of Buffer.from('0123456789+-.eEtrufalsn')) SCALAR[b] = 1;

/**
 * The first byte of the value whose last byte is at `end`, when it is a
 * string, a number, a literal or (with `objects`) an object of those: -1 to
 * give up, NOT_PLAIN for an object holding an object or an array.
 */
function valueStart(body: Uint8Array, end: number, objects: boolean): number {
  const b = body[end];
  if (b === QUOTE) return stringStart(body, end);
  if (b !== undefined && SCALAR[b] === 1) {
    let j = end;
    while (j > 0 && SCALAR[body[j - 1]!] === 1) j--;
    return j;
  }
  if (b === CLOSE_BRACE && objects) return plainObjectStart(body, end);
  if (b === CLOSE_BRACE || b === CLOSE_BRACKET) return NOT_PLAIN;
  return GIVE_UP;
}

/** The opening quote of the key of the member whose value starts at `start`, or GIVE_UP. */
function keyStart(body: Uint8Array, start: number): number {
  let i = back(body, start - 1);
  if (body[i] !== COLON) return GIVE_UP;
  i = back(body, i - 1);
  return body[i] === QUOTE ? stringStart(body, i) : GIVE_UP;
}

/**
 * The `{` of the object whose `}` is at `close`, walking its members
 * backward; NOT_PLAIN when one of them is an object or an array.
 */
function plainObjectStart(body: Uint8Array, close: number): number {
  let i = back(body, close - 1);
  if (body[i] === OPEN_BRACE) return i;
  for (;;) {
    const start = valueStart(body, i, false);
    if (start < 0) return start;
    const key = keyStart(body, start);
    if (key < 0) return GIVE_UP;
    i = back(body, key - 1);
    if (body[i] === OPEN_BRACE) return i;
    if (body[i] !== COMMA) return GIVE_UP;
    i = back(body, i - 1);
  }
}

/**
 * The index after the `data` object that starts at `dataStart` (its `{`),
 * found from the end of the body; undefined when the body is not of the
 * shape this walk knows, and is to be checked exactly.
 */
export function dataEndFromBack(body: Uint8Array, dataStart: number): number | undefined {
  let i = back(body, body.length - 1);
  if (body[i] !== CLOSE_BRACE) return undefined;
  i = back(body, i - 1);
  while (i > dataStart) {
    const start = valueStart(body, i, true);
    // An object that holds more than plain values: `data`'s last byte, by the guess above.
    if (start === NOT_PLAIN) return body[i] === CLOSE_BRACE ? i + 1 : undefined;
    // `data` itself, when it holds only plain values: then its end is known exactly.
    if (start === dataStart) return i + 1;
    if (start < dataStart) return undefined;
    const key = keyStart(body, start);
    if (key <= dataStart) return undefined;
    i = back(body, key - 1);
    if (body[i] !== COMMA) return undefined;
    i = back(body, i - 1);
  }
  return undefined;
}
