/**
 * The place in the template that the service's messages name, as
 * typst-pdf-client reads it (the playground marks and goes to it, the
 * command line prints an excerpt there): template errors worded by
 * src/messages.ts, warnings, and the body check's surrogate message; none
 * for an error in an included file or in the data.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { templatePlace } from 'typst-pdf-client';
import { templateMessage } from '../src/messages.js';

describe('templatePlace', () => {
  it("reads a template error's line and column, or its line alone", () => {
    const syntax = templateMessage({ kind: 'syntax', message: 'unclosed delimiter', line: 4, column: 10 });
    assert.equal(syntax, 'Invalid Typst syntax on line 4, column 10: unclosed delimiter');
    assert.deepEqual(templatePlace(syntax), { line: 4, column: 10 });
    const lineOnly = templateMessage({ kind: 'evaluation', message: 'unknown variable: x', line: 12, column: null });
    assert.deepEqual(templatePlace(lineOnly), { line: 12, column: null });
  });

  it("reads a warning's leading place", () => {
    assert.deepEqual(templatePlace('line 2, column 17: unknown font family'), { line: 2, column: 17 });
  });

  it("reads the body check's place in the template", () => {
    const message =
      'Field "template" contains an unpaired surrogate escape (\\uD800) on line 3, column 5 of the template: Typst text must be valid Unicode';
    assert.deepEqual(templatePlace(message), { line: 3, column: 5 });
  });

  it('names no place for an error in an included file, in the data, or without a place', () => {
    const included = templateMessage({ kind: 'evaluation', message: 'unknown variable: y', line: 3, column: 2, file: 'chapter.typ' });
    assert.equal(included, 'Typst error in chapter.typ on line 3, column 2: unknown variable: y');
    assert.equal(templatePlace(included), null);
    const includedSyntax = templateMessage({ kind: 'syntax', message: 'unclosed delimiter', line: 1, column: 1, file: 'part.typ' });
    assert.equal(templatePlace(includedSyntax), null);
    assert.equal(
      templatePlace(templateMessage({ kind: 'data', message: 'unexpected character at line 3 column 5 of the request body' })),
      null,
    );
    assert.equal(templatePlace('Rate limit exceeded'), null);
  });
});
