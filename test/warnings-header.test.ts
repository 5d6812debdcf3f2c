/**
 * X-Typst-Warnings as the service writes it (src/messages.ts) and as
 * typst-pdf-client reads it: the count dropped, the list split at ` | `, and
 * every `\uXXXX` escape (non-ASCII, control characters, the backslash, both
 * halves of a character beyond U+FFFF) decoded back to the text the service worded.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseWarnings } from 'typst-pdf-client';
import { warningsHeader } from '../src/messages.js';

describe('X-Typst-Warnings from the service to the client', () => {
  it('gives back each warning with its place, non-ASCII text decoded', () => {
    const header = warningsHeader([
      { line: 2, column: 17, message: 'unknown font family (not among GET /v1/fonts; Typst uses a fallback font)' },
      { line: 5, column: null, message: 'Café « naïve » — 日本語 😀' },
      { line: null, message: 'tab\there' },
    ]);
    assert.match(header, /^[\x20-\x7e]*$/, 'the header is printable ASCII');
    assert.ok(header.includes('Caf\\u00e9') && header.includes('\\ud83d\\ude00'));
    assert.deepEqual(parseWarnings(header), [
      'line 2, column 17: unknown font family (not among GET /v1/fonts; Typst uses a fallback font)',
      'line 5: Café « naïve » — 日本語 😀',
      'tab\there',
    ]);
  });

  it('gives back a backslash as it was, even one followed by "u" and hex digits', () => {
    const header = warningsHeader([{ line: 1, column: 1, message: 'a \\u0041 b \\ c' }]);
    assert.ok(header.includes('\\u005cu0041'));
    assert.deepEqual(parseWarnings(header), ['line 1, column 1: a \\u0041 b \\ c']);
  });

  it('reads escapes in either case, and leaves an escape cut short as it is', () => {
    assert.deepEqual(parseWarnings('2; line 1, column 2: \\u00C9t\\u00e9 | line 3: a\\u00'), ['line 1, column 2: Été', 'line 3: a\\u00']);
  });

  it('is empty without the header or without warnings', () => {
    assert.deepEqual(parseWarnings(null), []);
    assert.deepEqual(parseWarnings(''), []);
    assert.deepEqual(parseWarnings('0; '), []);
  });
});
