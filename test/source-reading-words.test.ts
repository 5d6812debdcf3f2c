/**
 * Which templates the 0.14 engine compiles as a file, and then drops its
 * compiler for (src/render/source-reading-words.ts): every identifier
 * `import`, `include`, `eval` or `std` that Typst's lexers could see, in
 * code or in math, must be found; words that merely contain one must not.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkBody } from '../src/bytes/json-check.js';
import { TypstEngine } from '../src/render/engine.js';
import { mayReadSources } from '../src/render/source-reading-words.js';

const WORDS = ['import', 'include', 'eval', 'std'];

type Mode = 'code' | 'math';
// Typst's lexer: in code an identifier starts with XID_Start or `_` and goes on with XID_Continue, `_` and `-`;
// in math it starts with XID_Start and goes on with XID_Continue except `_`.
const START: Record<Mode, RegExp> = { code: /^[\p{XID_Start}_]$/u, math: /^\p{XID_Start}$/u };
const CONTINUE: Record<Mode, (c: string) => boolean> = {
  code: (c) => /^[\p{XID_Continue}_-]$/u.test(c),
  math: (c) => /^\p{XID_Continue}$/u.test(c) && c !== '_',
};

/**
 * The oracle: every identifier Typst's lexer could read in `text` in either mode, taken wider than it is.
 * Each run of characters that continue an identifier is one identifier from its first character that can
 * start one; what comes before that (digits: a number, `2eval` in math) is read as something else.
 */
function identifiers(text: string): Set<string> {
  const found = new Set<string>();
  const chars = [...text];
  for (const mode of ['code', 'math'] as const) {
    for (let i = 0; i < chars.length; ) {
      if (!CONTINUE[mode](chars[i]!)) {
        i++;
        continue;
      }
      let end = i;
      while (end < chars.length && CONTINUE[mode](chars[end]!)) end++;
      let start = i;
      while (start < end && !START[mode].test(chars[start]!)) start++;
      if (start < end) found.add(chars.slice(start, end).join(''));
      i = end;
    }
  }
  return found;
}

const finds = (text: string) => mayReadSources(Buffer.from(text));

describe('a template that could make Typst read a file as source', () => {
  it('is found wherever one of the four is an identifier, in code or in math, next to anything', () => {
    for (const text of [
      '#import "parts.typ": x',
      '#include "part.typ"',
      '#eval("1 + 1")',
      '#std.eval("1")',
      '#let e = std',
      '#{import "a.typ"}',
      '$2eval("1")$',
      '$x_eval("1")$',
      '$x-eval("1")$',
      'eval',
      'x=(include)',
      'é#eval("1")',
      '#(\u00a0std)',
    ]) {
      assert.ok(finds(text), text);
    }
  });

  it('is not found where a word merely contains one of the four', () => {
    for (const text of [
      'Prices are shown including VAT. Important: the evaluation is attached.',
      'Imported goods, included in the medieval standard.',
      'must do',
      'evaluate, evals, eval2, stdx, Importer',
      '#let evaluation = 1\n#evaluation',
    ]) {
      assert.ok(!finds(text), text);
    }
  });

  it('is found whenever the oracle reads one of the four as an identifier (property)', () => {
    const piece = fc.constantFrom(
      ...WORDS,
      'imp',
      'ort',
      'ev',
      'al',
      'st',
      'd',
      'ant',
      's',
      'x',
      'é',
      'ł',
      '2',
      '_',
      '-',
      '#',
      '$',
      '.',
      ' ',
      '(',
      '"',
      '\u0301',
      '·',
      '\u00a0',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const text = pieces.join('');
        const named = WORDS.some((word) => identifiers(text).has(word));
        if (named) assert.ok(finds(text), `not found in ${JSON.stringify(text)}`);
        // Never found where none of the four is even a part of the text.
        if (!WORDS.some((word) => text.includes(word))) assert.ok(!finds(text), JSON.stringify(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('is looked at in time linear in its length', () => {
    const long = Buffer.from('importan'.repeat(1 << 20));
    const started = performance.now();
    assert.ok(!mayReadSources(long));
    // 8 MiB of near-misses: about 40 ms here; a quadratic walk would take hours.
    assert.ok(performance.now() - started < 5000);
  });
});

describe('the 0.14 engine after a job', () => {
  const engine = new TypstEngine('0.14');
  const render = (template: string) => {
    const body = Buffer.from(JSON.stringify({ data: {}, template, typst: '0.14' }));
    const check = checkBody(body);
    assert.ok(check.ok);
    const outcome = engine.render({ body, layout: check.layout });
    assert.ok(outcome.ok, template);
    const drops = engine.dropsCompiler;
    engine.clean();
    engine.prepare();
    return drops;
  };

  it('keeps its compiler after a letter that says "including" and "important"', () => {
    assert.equal(render('Prices are shown including VAT. Important: pay within 30 days.'), false);
  });

  it('drops it after a template that uses eval', () => {
    assert.equal(render('#eval("1 + 1")'), true);
  });
});
