/**
 * The one rule for places in text (src/bytes/text-position.ts), held to an oracle
 * built from JavaScript strings: lines split at LF, CRLF and CR, columns
 * counted in code points.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { bomLength, characterCount, offsetOf, placeInJsonString, placeOf } from '../src/bytes/text-position.js';

/** Text made mostly of line ends and characters of every UTF-8 width. */
const text = fc
  .array(fc.constantFrom('\n', '\r', '\r\n', 'a', 'é', '€', '😀', ' ', '\u2028'), { maxLength: 60 })
  .map((parts) => parts.join(''));

function oracle(before: string): { line: number; column: number } {
  const lines = before.split(/\r\n|\r|\n/);
  return { line: lines.length, column: Array.from(lines.at(-1)!).length + 1 };
}

/** The text before a character boundary picked by `pick`. */
function textBefore(value: string, pick: number): string {
  const chars = Array.from(value);
  const cut = pick % (chars.length + 1);
  const before = chars.slice(0, cut).join('');
  // A cut between CR and LF is not a place a message names: the CRLF is one line end.
  fc.pre(!(before.endsWith('\r') && chars[cut] === '\n'));
  return before;
}

describe('text positions', () => {
  it('place of every character boundary: the line and column a split by LF, CRLF and CR gives', () => {
    fc.assert(
      fc.property(text, fc.nat(), (value, pick) => {
        const before = textBefore(value, pick);
        assert.deepEqual(placeOf(Buffer.from(value), Buffer.byteLength(before)), oracle(before));
      }),
      { numRuns: 2000 },
    );
  });

  it('finds the byte of a line and column: the inverse of placeOf', () => {
    fc.assert(
      fc.property(text, fc.nat(), (value, pick) => {
        const at = Buffer.byteLength(textBefore(value, pick));
        const bytes = Buffer.from(value);
        const { line, column } = placeOf(bytes, at);
        assert.equal(offsetOf(bytes, line - 1, column - 1), at);
      }),
      { numRuns: 2000 },
    );
  });

  it('places an escape of a JSON string in the text JSON.parse gives, by the same rule', () => {
    // Written as JSON: plain characters, and escapes of line ends, of a surrogate pair and of plain letters.
    const piece = fc.constantFrom('a', 'é', '😀', ' ', '\\n', '\\r', '\\r\\n', '\\u00e9', '\\ud83d\\ude00', '\\"', '\\\\', '\\t', 'x');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), fc.nat(), (pieces, pick) => {
        const cut = pick % (pieces.length + 1);
        const raw = pieces.join('');
        const body = Buffer.from(`"${raw}"`);
        const decodedBefore = JSON.parse(`"${pieces.slice(0, cut).join('')}"`) as string;
        const decodedAll = JSON.parse(`"${raw}"`) as string;
        // Not between the CR and LF of one line end.
        fc.pre(!(decodedBefore.endsWith('\r') && decodedAll[decodedBefore.length] === '\n'));
        const at = 1 + Buffer.byteLength(pieces.slice(0, cut).join(''));
        assert.deepEqual(placeInJsonString(body, { start: 1, end: body.length - 1 }, at), oracle(decodedBefore));
      }),
      { numRuns: 2000 },
    );
  });

  it('counts from the start it is given', () => {
    const bytes = Buffer.from('{"t": "a\\nb"}\nx\ny');
    assert.deepEqual(placeOf(bytes, bytes.length - 1, 14), { line: 2, column: 1 });
  });

  it('counts characters, not bytes', () => {
    fc.assert(fc.property(text, (value) => characterCount(Buffer.from(value)) === Array.from(value).length));
  });

  it('finds a byte order mark only at the start', () => {
    assert.equal(bomLength(Buffer.from('\ufeff= Title')), 3);
    assert.equal(bomLength(Buffer.from('= \ufeffTitle')), 0);
    assert.equal(bomLength(Buffer.from([0xef, 0xbb])), 0);
  });
});
