/**
 * Which templates the service warns about as a file's path sent instead of
 * its contents (src/render/path-template.ts): one word ending in ".typ", and
 * nothing a template that means something could be.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPathLike } from '../src/render/path-template.js';

const bytes = (text: string) => Buffer.from(text);

describe('a template that is a path', () => {
  it('is one word ending in .typ, in any case', () => {
    for (const path of ['letter.typ', 'examples/letter.typ', '/tmp/x.TYP', 'C:\\docs\\a b.typ'.replace(' ', '_'), 'é.typ']) {
      assert.equal(isPathLike(bytes(path)), true, path);
    }
  });

  it('is not markup, words with spaces or lines, code, another suffix, or the suffix alone', () => {
    for (const template of [
      '= Title',
      'see letter.typ',
      'letter.typ\n',
      '#include "a.typ"',
      '#x.typ',
      'letter.typst',
      '.typ',
      '',
      'a.ty',
    ]) {
      assert.equal(isPathLike(bytes(template)), false, JSON.stringify(template));
    }
    assert.equal(isPathLike(bytes(`${'a'.repeat(5000)}.typ`)), false, 'longer than a path');
  });
});
