/**
 * Which templates the 0.14 engine compiles as a file, and then drops its
 * compiler for (src/render/source-reading-words.ts): every identifier
 * `eval` or `std` that Typst's lexers could see, in code or in math, must be
 * found, and every `import` or `include` that Typst evaluates (the engine
 * itself is the oracle); words that merely contain one, and the two
 * keywords in prose, must not.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { checkBody } from '../src/bytes/json-check.js';
import { TypstEngine } from '../src/render/engine.js';
import { makeOwnersToWrite, providePackages, removeCopy } from '../src/render/package-scan.js';
import { mayReadSources } from '../src/render/source-reading-words.js';
import { NO_RATE_LIMIT } from './support/hostile.js';
import { addPackage, packageDirectory } from './support/packages.js';
import { generate, type Service, startService } from './support/service.js';

const NAMES = ['eval', 'std'];

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
  it('is found wherever eval or std is an identifier, or import or include is code, next to anything', () => {
    for (const text of [
      '#import "parts.typ": x',
      '#include "part.typ"',
      '#eval("1 + 1")',
      '#std.eval("1")',
      '#let e = std',
      '#{import "a.typ"}',
      '#{\n  let x = y\n  include "a.typ"\n}',
      '#let x = 1 include "a.typ"',
      '#for x in include "a.typ" {}',
      '#{ x not include "a.typ" }',
      '#let f() = { return include "a.typ" }',
      '#{ if x {} else include "a.typ" }',
      '#(x, y-in include "a.typ")',
      '$2eval("1")$',
      '$x_eval("1")$',
      '$x-eval("1")$',
      '$\\astd.eval("1")$',
      '$\\astd.read("part.typ")$',
      '$\u0600astd.repr(1)$',
      'eval',
      'include',
      'x=(include)',
      'é#eval("1")',
      '#(\u00a0std)',
      'Prices\u00a0include VAT',
    ]) {
      assert.ok(finds(text), text);
    }
  });

  it('is not found where a word merely contains one, or import or include is prose', () => {
    for (const text of [
      'Prices are shown including VAT. Important: the evaluation is attached.',
      'Imported goods, included in the medieval standard.',
      'must do',
      'evaluate, evals, eval2, stdx, Importer',
      '#let evaluation = 1\n#evaluation',
      'All prices include VAT. We import from 12 countries.',
      '#data.name: prices include\tVAT',
      'Deliverables typically include:',
    ]) {
      assert.ok(!finds(text), text);
    }
  });

  it('is found whenever the oracle reads eval or std as an identifier (property)', () => {
    const piece = fc.constantFrom(
      ...NAMES,
      'ev',
      'al',
      'st',
      'd',
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
        const named = NAMES.some((word) => identifiers(text).has(word));
        if (named) assert.ok(finds(text), `not found in ${JSON.stringify(text)}`);
        // Never found where none of the four is even a part of the text.
        if (!NAMES.some((word) => text.includes(word))) assert.ok(!finds(text), JSON.stringify(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('is looked at in time linear in its length', () => {
    for (const near of ['importan', 'x include', `${' '.repeat(1000)}include`]) {
      const long = Buffer.from(near.repeat((8 << 20) / near.length));
      const started = performance.now();
      mayReadSources(long);
      // 8 MiB of near-misses: about 40 ms here; a quadratic walk would take hours.
      assert.ok(performance.now() - started < 5000, near);
    }
  });
});

/** What a template's import or include reads, or its eval runs: evaluated, it fails the compile with this message. */
const PROBE = 'probe source read';
const PROBE_ASSET = Buffer.from(`#panic("${PROBE}")`).toString('base64');

describe('the 0.14 engine', () => {
  const engine = new TypstEngine('0.14');
  /** Renders `template` with the probe as an asset; whether its compiler is then dropped, and whether the probe was evaluated. */
  const render = (template: string) => {
    const body = Buffer.from(JSON.stringify({ data: {}, template, typst: '0.14', assets: { 'probe.typ': PROBE_ASSET } }));
    const check = checkBody(body);
    assert.ok(check.ok);
    const outcome = engine.render({ body, layout: check.layout });
    const drops = engine.dropsCompiler;
    engine.clean();
    engine.prepare();
    return { ok: outcome.ok, drops, probed: !outcome.ok && outcome.failure.message.includes(PROBE) };
  };

  it('keeps its compiler after a letter that says "including", "important" and "prices include VAT"', () => {
    assert.deepEqual(render('Prices are shown including VAT. Important: all prices include VAT.'), {
      ok: true,
      drops: false,
      probed: false,
    });
  });

  it('drops it after a template that uses eval or includes a file', () => {
    assert.deepEqual(render('#eval("1 + 1")'), { ok: true, drops: true, probed: false });
    assert.deepEqual(render('#include "probe.typ"'), { ok: false, drops: true, probed: true });
  });

  it('finds each import, include and eval that Typst evaluates, in 600 templates of many places and leads (property, Typst as the oracle)', () => {
    // Where the keyword goes (HOLE), in each of the places Typst reads code, markup, math, strings and comments.
    const place = fc.constantFrom(
      'HOLE',
      '#{ HOLE }',
      '#{\n  let a = 1\n  HOLE\n}',
      '#{\n  let a = x\n  HOLE\n}',
      '#( HOLE )',
      '#[ HOLE ]',
      '#let z = HOLE',
      '#let f() = HOLE\n#f()',
      '#let f() = { HOLE }\n#f()',
      '$ HOLE $',
      '$HOLE$',
      '#if true { HOLE }',
      '#if false {} else { HOLE }',
      '#for i in (1,) { HOLE }',
      '#context { HOLE }',
      '#(1, HOLE)',
      '#(a: HOLE)',
      '#box[HOLE]',
      '// HOLE',
      '/* HOLE */',
      '#"HOLE"',
      '`HOLE`',
      '#show: it => { HOLE }\nBody',
    );
    const anyLead = fc.constantFrom(
      '',
      '#',
      'x ',
      'Prices ',
      'we\t',
      'let ',
      'let w = ',
      'return ',
      'in ',
      'not ',
      'and ',
      'else ',
      'context ',
      'true ',
      '1 ',
      'a-b ',
      'x_y ',
      'x.y ',
      'é ',
      '; ',
      '\n',
      '+ ',
      '= ',
      ': ',
      ', ',
      '(',
      '{ ',
      '[',
      '=> ',
      '\\',
      '\\a',
      '\u0600a',
      'a',
      '2',
      '_',
      '-',
      'é',
      '*',
    );
    // Prose before the keyword, more often: most places make it a syntax error.
    const lead = fc.oneof({ weight: 3, arbitrary: anyLead }, { weight: 1, arbitrary: fc.constantFrom('Prices ', 'we\t', 'x ', 'a-b ') });
    const keyword = fc.constantFrom(
      'include "probe.typ"',
      'import "probe.typ"',
      'include("probe.typ")',
      'import "probe.typ": *',
      `eval("panic(\\"${PROBE}\\")")`,
      `std.eval("panic(\\"${PROBE}\\")")`,
      `dictionary(std).at("eval")("panic(\\"${PROBE}\\")")`,
      `dictionary(std).at("ev" + "al")("panic(\\"${PROBE}\\")")`,
    );
    // Prose that compiles, for sure, besides what the random runs bring (about 15 in 600, but as few as 8).
    const proseExamples: [string, string[], string][] = ['HOLE', '#[ HOLE ]', '#box[HOLE]'].flatMap((where) =>
      ['Prices ', 'we\t', 'a-b '].flatMap((lead) =>
        ['include "probe.typ"', 'import "probe.typ"'].map((word): [string, string[], string] => [where, [lead], word]),
      ),
    );
    const seen = { probed: 0, proseCompiled: 0 };
    fc.assert(
      fc.property(place, fc.array(lead, { maxLength: 2 }), keyword, (where, leads, word) => {
        const template = `#let x = 1\n#let y = 2\n${where.replace('HOLE', leads.join('') + word)}`;
        const found = finds(template);
        const { ok, probed } = render(template);
        if (probed) {
          seen.probed++;
          assert.ok(found, `Typst read the probe, but the check did not find it in ${JSON.stringify(template)}`);
        }
        if (ok && !found) seen.proseCompiled++;
      }),
      { numRuns: 600, examples: proseExamples },
    );
    // Both sides came up: templates whose keyword Typst evaluated, and ones left as prose that compiled.
    assert.ok(seen.probed >= 40 && seen.proseCompiled >= proseExamples.length, JSON.stringify(seen));
  });
});

const BENIGN = '#let greet(name) = [Greetings, #name!]\n#let load(path) = include path\n';
const PACKAGE = '@preview/greeting:0.1.0';

describe('an import of a package by its name alone', () => {
  const leftOut = (text: string) => !mayReadSources(Buffer.from(text), false);

  it('is left out where what is imported can only be the package, and the packages hand out no eval', () => {
    for (const text of [
      `#import "${PACKAGE}": greet`,
      `#import "${PACKAGE}"\nHello`,
      `#import "${PACKAGE}"\r\nHello`,
      `#import "${PACKAGE}" as g\n#g.greet(1)`,
      `#{ import "${PACKAGE}": greet; greet(1) }`,
      `#(import "${PACKAGE}")`,
      `#import "${PACKAGE}"`,
    ]) {
      assert.ok(leftOut(text), text);
      assert.ok(mayReadSources(Buffer.from(text)), `${text}: counted when packages may hand out eval`);
    }
  });

  it('counts where the line could go on, or anything after the name could make it a path', () => {
    for (const text of [
      '#(import "@probe.typ"\n.slice(1))',
      '#{ import "@probe.typ"\n.slice(1) }',
      '#{ import "@probe.typ"\r\n.trim("@") }',
      `#import "${PACKAGE}".replace("${PACKAGE}", "probe.typ")`,
      `#import "${PACKAGE}" + ""`,
      `#import "${PACKAGE}" // .slice(1)`,
      `#import "${PACKAGE}\\"": a`,
      `#import "${PACKAGE}`,
      `#import "${PACKAGE}" asx`,
      `#import "${PACKAGE}" as`,
      `#import ("${PACKAGE}")`,
      `#include "${PACKAGE}"`,
    ]) {
      assert.ok(!leftOut(text), text);
    }
  });

  it('is left out only when PACKAGE_PATH was copied and no file of the copy names eval or std', () => {
    const dirs: string[] = [];
    /** Provides the packages of `lib` (and `extra`, after the directory is made), as the sandbox does: whether they may hand out eval, and whether Typst gets a copy. */
    const provided = (lib: string, extra?: (dir: string) => void) => {
      const source = packageDirectory(lib);
      const home = mkdtempSync(join(tmpdir(), 'typst-test-home-'));
      dirs.push(source, home);
      extra?.(source);
      const target = join(home, 'packages');
      const mayHandOutEval = providePackages(source, target);
      return { mayHandOutEval, copied: !lstatSync(target).isSymbolicLink() };
    };
    try {
      assert.deepEqual(provided(BENIGN), { mayHandOutEval: false, copied: true });
      assert.deepEqual(provided('#let evaluation = 1\n'), { mayHandOutEval: false, copied: true });
      assert.deepEqual(provided('#let e = eval\n'), { mayHandOutEval: true, copied: false });
      assert.deepEqual(provided('#let s = std\n'), { mayHandOutEval: true, copied: false });
      assert.deepEqual(
        provided(BENIGN, (dir) => symlinkSync('/etc', join(dir, 'preview', 'link'))),
        { mayHandOutEval: true, copied: false },
      );
      assert.equal(providePackages('/nonexistent-typst-packages', join(dirs[1]!, 'absent')), true);
    } finally {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes a copy of read-only directories its own to remove, and leaves a link inside it alone', () => {
    // A read-only directory (0555) cannot be emptied by a service that does not run as root until it is made writable.
    const root = packageDirectory(BENIGN);
    const outside = mkdtempSync(join(tmpdir(), 'typst-test-outside-'));
    try {
      const version = join(root, 'preview', 'greeting', '0.1.0');
      symlinkSync(outside, join(version, 'link'));
      for (const at of [version, join(root, 'preview', 'greeting'), join(root, 'preview')]) chmodSync(at, 0o555);
      chmodSync(outside, 0o555);
      makeOwnersToWrite(root);
      for (const at of [root, join(root, 'preview'), join(root, 'preview', 'greeting'), version]) {
        assert.equal(lstatSync(at).mode & 0o777, 0o700, at);
      }
      assert.equal(lstatSync(outside).mode & 0o777, 0o555, 'the link was not followed');
      removeCopy(root);
      assert.ok(!existsSync(root) && existsSync(outside));
    } finally {
      chmodSync(outside, 0o700);
      rmSync(outside, { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
    }
  });

  describe('in the service with PACKAGE_PATH', () => {
    let service: Service;
    let packages: string;

    before(async () => {
      packages = packageDirectory(BENIGN);
      service = await startService({ PACKAGE_PATH: packages, WORKERS: '1', ...NO_RATE_LIMIT });
    });
    after(async () => {
      await service.stop();
      rmSync(packages, { recursive: true, force: true });
    });

    it('is counted whenever what is imported could be a file of the request (property, Typst as the oracle)', async () => {
      // What the import names: the package, or expressions that start with a name beginning with @ and may end at the probe.
      const what = fc.oneof(
        { weight: 2, arbitrary: fc.constant(`"${PACKAGE}"`) },
        {
          weight: 5,
          arbitrary: fc.constantFrom(
            '"@probe.typ"',
            '"@/probe.typ"',
            `"${PACKAGE}".replace("${PACKAGE}", "probe.typ")`,
            `("${PACKAGE}", "probe.typ").at(1)`,
            `"${PACKAGE}".slice(0, 0) + "probe.typ"`,
            '"probe.typ"',
          ),
        },
      );
      const tail = fc.constantFrom(
        '',
        ': greet',
        ': *',
        ' as g',
        ';',
        '\n',
        '\n.slice(1)',
        '\r\n.slice(1)',
        '\n.trim("@")',
        ' .slice(1)',
        '\n.slice(1) as g',
        ')',
      );
      const place = fc.constantFrom(
        '#HOLE\nDone',
        '#{ HOLE }',
        '#{\n  HOLE\n}',
        '#(HOLE)',
        '#let m = (HOLE)\nDone',
        '#[#HOLE]',
        '$ #HOLE $',
      );
      const seen = { probed: 0, packageCompiled: 0 };
      await fc.assert(
        fc.asyncProperty(place, what, tail, async (where, name, end) => {
          const template = where.replace('HOLE', `import ${name}${end}`);
          const response = await generate(service, { data: {}, template, typst: '0.14', assets: { 'probe.typ': PROBE_ASSET } });
          assert.ok([200, 400].includes(response.status), `${response.status} for ${JSON.stringify(template)}`);
          const text = response.status === 200 ? '' : await response.text();
          if (response.status === 200) await response.arrayBuffer();
          const counted = mayReadSources(Buffer.from(template), false);
          if (text.includes(PROBE)) {
            seen.probed++;
            assert.ok(counted, `Typst read the probe, but the check left the import out in ${JSON.stringify(template)}`);
          }
          if (response.status === 200 && !counted) seen.packageCompiled++;
        }),
        { numRuns: 200 },
      );
      assert.ok(seen.probed >= 20 && seen.packageCompiled >= 5, JSON.stringify(seen));
    });

    it('uses the packages as they were at start: one added later, that hands out eval, is not found', async () => {
      addPackage(packages, 'tools', '0.1.0', '#let run = eval\n');
      const template = '#import "@preview/tools:0.1.0": run\n#run("imp" + "ort \\"probe.typ\\"")';
      assert.ok(!mayReadSources(Buffer.from(template), false), 'the check leaves the import out');
      const response = await generate(service, { data: {}, template, typst: '0.14', assets: { 'probe.typ': PROBE_ASSET } });
      const text = await response.text();
      assert.equal(response.status, 400);
      assert.match(text, /package @preview\/tools:0\.1\.0 is not available/);
      assert.ok(!text.includes(PROBE), text);
    });

    it("through a package that does its own include, reads the package's file, not the request's", async () => {
      const response = await generate(service, {
        data: {},
        template: `#import "${PACKAGE}": load\n#load("probe.typ")`,
        typst: '0.14',
        assets: { 'probe.typ': PROBE_ASSET },
      });
      const text = await response.text();
      assert.equal(response.status, 400);
      assert.ok(!text.includes(PROBE), text);
    });
  });
});
