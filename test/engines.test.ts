/**
 * Both Typst engines in one service, end to end: the same requests on 0.11
 * and 0.14 get the same answers, the `typst` field picks the engine and
 * `X-Typst-Version` names it, the operator's TYPST_VERSION sets the default,
 * and the time limit and memory cap hold on 0.14 too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NO_RATE_LIMIT } from './support/hostile.js';
import { parsePdf } from './support/pdf.js';
import { pdfFontNames, pdfText } from './support/poppler.js';
import { generate, startService, type Service, pdfBytesOf, errorOf } from './support/service.js';

const pdfOf = async (res: Response) => parsePdf(await pdfBytesOf(res));

const ENGINES = [
  { typst: '0.11', version: '0.11.1' },
  { typst: '0.14', version: '0.14.2' },
] as const;

// Long enough that the runaway allocation below reaches the memory cap first (about 1.7 s on a quiet machine) even under load.
const TIMEOUT_MS = 6000;

let service: Service;
before(async () => {
  service = await startService({ ...NO_RATE_LIMIT, COMPILE_TIMEOUT_MS: String(TIMEOUT_MS), MAX_WORKER_MEMORY_MB: '512' });
});
after(async () => {
  await service.stop();
});

const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20"/></svg>').toString(
  'base64',
);

/** Requests whose answer is the same on both engines: a PDF's text (and fonts), or an error message. */
const SAME_ON_BOTH: { name: string; body: Record<string, unknown>; text?: string; fonts?: RegExp; error?: string; warning?: RegExp }[] = [
  { name: 'data fields', body: { data: { name: 'World' }, template: 'Hello #data.name' }, text: 'Hello World' },
  {
    name: 'data as json() makes it: numbers stay numbers, null is none',
    body: {
      data: { i: 3, f: 2.5, b: true, n: null, s: '7', a: [1], o: {} },
      // Types are compared, not printed: 0.14 prints `int` where 0.11 printed `integer`.
      template:
        '#for (k, t) in (("i", int), ("f", float), ("b", bool), ("n", type(none)), ("s", str), ("a", array), ("o", dictionary)) [#k=#(type(data.at(k)) == t) ]\n#(data.i + 1)',
    },
    text: 'i= true f= true b= true n= true s= true a= true o= true 4',
  },
  {
    name: 'markup characters from data print literally',
    body: { data: { s: 'A & B #c $d$ *e* _f_ @g <h>' }, template: '#data.s' },
    text: 'A & B #c $d$ *e* _f_ @g <h>',
  },
  {
    name: 'an SVG asset',
    body: { data: {}, template: 'Seal: #image("img/seal.svg", width: 2cm)', assets: { 'img/seal.svg': svg } },
    text: 'Seal:',
  },
  { name: 'a font alias', body: { data: {}, template: '#set text(font: "Arial")\nAliased' }, text: 'Aliased', fonts: /^Arimo/ },
  {
    name: 'an unknown font: a warning, and the PDF',
    body: { data: {}, template: '#set text(font: "Nope")\nHi' },
    text: 'Hi',
    warning: /^1; line 1, column 17: unknown font family/,
  },
  {
    name: 'a syntax error',
    body: { data: {}, template: 'line one\nline two\n#let x = (' },
    error: 'Invalid Typst syntax on line 3, column 10: unclosed delimiter',
  },
  {
    name: 'an evaluation error',
    body: { data: { a: 1 }, template: 'Hello\n  #data.missing' },
    error: 'Typst error on line 2, column 9: dictionary does not contain key "missing"',
  },
  {
    name: 'columns in characters',
    body: { data: {}, template: 'ÄÖü😀 #nope' },
    error: 'Typst error on line 1, column 7: unknown variable: nope',
  },
  {
    name: 'a missing asset, with the hint',
    body: { data: {}, template: '#image("logo.png")' },
    error:
      'Typst error on line 1, column 8: file not found: logo.png; hint: a template reads only the files sent in the request\'s "assets" field, e.g. "assets": {"logo.png": "<base64>"}',
  },
  {
    name: 'a host file',
    body: { data: {}, template: '#read("/etc/passwd")' },
    error:
      'Typst error on line 1, column 7: file not found: /etc/passwd; hint: a template reads only the files sent in the request\'s "assets" field, e.g. "assets": {"etc/passwd": "<base64>"}',
  },
  {
    name: 'a path no asset could have, whose hint then shows an asset name that could be sent',
    body: { data: {}, template: '#read("~/notes.txt")' },
    error:
      'Typst error on line 1, column 7: file not found: ~/notes.txt; hint: a template reads only the files sent in the request\'s "assets" field, e.g. "assets": {"logo.png": "<base64>"}',
  },
  {
    name: 'a path outside the root',
    body: { data: {}, template: '#read("../../etc/hostname")' },
    error: 'Typst error on line 1, column 7: failed to load file (access denied); hint: cannot read file outside of project root',
  },
  {
    name: 'a network address',
    body: { data: {}, template: '#image("https://example.com/a.png")' },
    error:
      'Typst error on line 1, column 8: file not found: https://example.com/a.png; hint: the service fetches nothing from the network: send the file in the request\'s "assets" field and name it by its asset name',
  },
  {
    name: 'a package not in PACKAGE_PATH',
    body: { data: {}, template: '#import "@preview/cetz:0.2.0": canvas' },
    error:
      'Typst error on line 1, column 9: package @preview/cetz:0.2.0 is not available: this service does not download packages (an operator can provide them in PACKAGE_PATH)',
  },
  {
    name: 'an error in an included asset',
    body: { data: {}, template: '#include "part.typ"', assets: { 'part.typ': Buffer.from('\n#let x = 1\n#x.y()').toString('base64') } },
    error: 'Typst error in part.typ on line 3, column 4: type integer has no method `y`',
  },
  {
    name: 'a panic',
    body: { data: {}, template: 'x\n#panic("stop here")' },
    error: 'Typst error on line 2, column 2: panicked with: "stop here"',
  },
  {
    name: 'a loop Typst sees is endless',
    body: { data: {}, template: '#let i = 0\n#while i >= 0 { i += 1 }' },
    error: 'Typst error on line 2, column 2: loop seems to be infinite',
  },
];

describe('the same request on both engines', () => {
  for (const c of SAME_ON_BOTH) {
    it(c.name, async () => {
      for (const { typst, version } of ENGINES) {
        const res = await generate(service, { ...c.body, typst });
        assert.equal(res.headers.get('x-typst-version'), version);
        if (c.error !== undefined) {
          assert.equal(await errorOf(res, 400), c.error, `on ${typst}`);
          continue;
        }
        if (c.warning) assert.match(res.headers.get('x-typst-warnings') ?? '', c.warning, `on ${typst}`);
        const pdf = await pdfOf(res);
        assert.equal(pdf.creator, `Typst ${version}`);
        assert.equal(pdf.text[0]?.replace(/\s+/g, ' ').trim(), c.text, `on ${typst}`);
        if (c.fonts)
          assert.ok(
            pdf.fonts.some((f) => c.fonts!.test(f)),
            `${pdf.fonts} on ${typst}`,
          );
      }
    });
  }

  it('keeps the meaning of the first line: a heading gets an outline entry', async () => {
    for (const { typst } of ENGINES) {
      const pdf = await pdfOf(await generate(service, { data: {}, template: '= Annual Report\nBody text.', typst }));
      assert.deepEqual(pdf.outline, ['Annual Report'], `on ${typst}`);
    }
  });

  it("places an error of Typst's json() in the request body as sent", async () => {
    for (const { typst } of ENGINES) {
      // JSON.parse reads 1e400 as Infinity; Typst's json() refuses it.
      const body = `{"typst": "${typst}",\n"data": {"x": 1e400}, "template": "#data.x"}`;
      assert.equal(
        await errorOf(await generate(service, body), 400),
        "The request's data could not be read by Typst: failed to parse JSON (number out of range at line 2 column 19 of the request body)",
        `on ${typst}`,
      );
    }
  });
});

describe('fonts on both engines', () => {
  it('prints emoji with the bundled Noto Emoji: its glyphs in the PDF, the emoji copied back out', async () => {
    const emoji = ['🎉', '😀', '🚀', '👍', '🇩🇪'];
    for (const { typst } of ENGINES) {
      const res = await generate(service, { data: {}, template: `Party ${emoji.join(' ')}`, typst });
      assert.equal(res.status, 200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      assert.ok(
        pdfFontNames(bytes).some((name) => /^NotoEmoji-Regular/.test(name)),
        `${pdfFontNames(bytes)} on ${typst}`,
      );
      assert.equal(pdfText(bytes).trim(), `Party ${emoji.join(' ')}`, `on ${typst}`);
    }
  });

  it('knows the default serif of each engine: Linux Libertine on 0.11, Libertinus Serif on 0.14', async () => {
    const unknown = /^1; line 1, column 17: unknown font family/;
    for (const [typst, known, other] of [
      ['0.11', 'Linux Libertine', 'Libertinus Serif'],
      ['0.14', 'Libertinus Serif', 'Linux Libertine'],
    ]) {
      const ok = await generate(service, { data: {}, template: `#set text(font: "${known}", fallback: false)\nSerif`, typst });
      assert.equal(ok.headers.get('x-typst-warnings'), null, `${known} on ${typst}`);
      assert.equal((await parsePdf(await ok.arrayBuffer())).text[0], 'Serif');
      const warned = await generate(service, { data: {}, template: `#set text(font: "${other}")\nSerif`, typst });
      assert.match(warned.headers.get('x-typst-warnings') ?? '', unknown, `${other} on ${typst}`);
      await warned.arrayBuffer();
    }
  });
});

describe('the typst field', () => {
  it('takes the exact versions too', async () => {
    for (const [typst, version] of [
      ['0.11.1', '0.11.1'],
      ['0.14.2', '0.14.2'],
    ]) {
      const res = await generate(service, { data: {}, template: 'x', typst });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-typst-version'), version);
      assert.equal((await parsePdf(await res.arrayBuffer())).creator, `Typst ${version}`);
    }
  });

  it('is the operator default when absent or null', async () => {
    for (const body of [
      { data: {}, template: 'x' },
      { data: {}, template: 'x', typst: null },
    ]) {
      const res = await generate(service, body);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-typst-version'), '0.11.1');
      await res.arrayBuffer();
    }
  });

  it('refuses any other value with 400', async () => {
    for (const typst of ['0.12', '0.14.1', '0.11.0', '', ' 0.14', 0.14, true, ['0.14'], { v: '0.14' }]) {
      assert.equal(
        await errorOf(await generate(service, { data: {}, template: 'x', typst }), 400),
        'Field "typst" must be one of "0.11", "0.14"',
      );
    }
  });

  it('reads an escaped value as JSON means it', async () => {
    const body = '{"data":{},"template":"x","typst":"0\\u002e14"}';
    const res = await generate(service, body);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-typst-version'), '0.14.2');
    await res.arrayBuffer();
  });

  it('a 0.11 construct removed since gets 0.14 own error, on its line', async () => {
    const template = 'Where:\n#locate(loc => loc.page())';
    const old = await generate(service, { data: {}, template, typst: '0.11' });
    assert.equal(old.status, 200);
    await old.arrayBuffer();
    assert.equal(
      await errorOf(await generate(service, { data: {}, template, typst: '0.14' }), 400),
      'Typst error on line 2, column 9: only element functions can be used as selectors',
    );
  });

  it('copies Thai, Hindi and Japanese back out of a 0.14 PDF as sent', async () => {
    const lines = ['สวัสดีครับ ภาษาไทย', 'नमस्ते दुनिया, हिन्दी', 'こんにちは世界、日本語です'];
    const fonts = ['Noto Sans Thai', 'Noto Sans Devanagari', 'Noto Sans JP'];
    const template = lines.map((line, i) => `#text(font: "${fonts[i]}")[${line}]`).join('\n\n');
    const res = await generate(service, { data: {}, template, typst: '0.14' });
    assert.equal(res.status, 200);
    const copied = pdfText(new Uint8Array(await res.arrayBuffer()))
      .split(/\n+/)
      .map((line) => line.trim().normalize('NFKC'))
      .filter(Boolean);
    assert.deepEqual(
      copied,
      lines.map((line) => line.normalize('NFKC')),
    );
  });
});

describe('limits on 0.14', () => {
  it(`stops a runaway loop at the ${TIMEOUT_MS / 1000} s limit`, async () => {
    const started = Date.now();
    const res = await generate(service, { data: {}, template: '#for i in range(100000) { for j in range(100000) { } }', typst: '0.14' });
    assert.equal(await errorOf(res, 422), `Template compilation exceeded the ${TIMEOUT_MS / 1000} second limit`);
    assert.ok(Date.now() - started < TIMEOUT_MS + 1500);
  });

  it('stops a runaway allocation at the memory cap', async () => {
    const res = await generate(service, { data: {}, template: '#range(1000000000).len()', typst: '0.14' });
    assert.equal(await errorOf(res, 422), 'Template compilation exceeded the memory limit');
  });

  it('answers 0.14 requests again right after', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await generate(service, { data: { i }, template: 'Again #data.i', typst: '0.14' });
      assert.equal(res.status, 200);
      assert.equal((await parsePdf(await res.arrayBuffer())).text[0], `Again ${i}`);
    }
  });
});

describe('TYPST_VERSION=0.14', () => {
  let other: Service;
  before(async () => {
    other = await startService({ WORKERS: '1', TYPST_VERSION: '0.14' });
  });
  after(async () => {
    await other.stop();
  });

  it('makes 0.14 the default, and 0.11 still answers when asked for', async () => {
    const plain = await generate(other, { data: {}, template: 'x', pdf: { standard: 'a-2b' } });
    assert.equal(plain.status, 200, await plain.clone().text());
    assert.equal(plain.headers.get('x-typst-version'), '0.14.2');
    await plain.arrayBuffer();
    const old = await generate(other, { data: {}, template: 'x', typst: '0.11' });
    assert.equal(old.headers.get('x-typst-version'), '0.11.1');
    assert.equal((await parsePdf(await old.arrayBuffer())).creator, 'Typst 0.11.1');
  });

  it('says so where a client reads the default: the OpenAPI document and the playground', async () => {
    const openapi = (await (await fetch(`${other.url}/v1/openapi.json`)).json()) as { info: { description: string } };
    assert.match(openapi.info.description, /\(default 0\.14\.2\)/);
    const playground = await (await fetch(`${other.url}/playground/service.json`)).json();
    assert.deepEqual(playground, { typstDefault: '0.14.2' });
  });
});
