/**
 * Fonts as clients meet them: names that templates use give the stand-in
 * fonts, GET /v1/fonts lists what the workers loaded, and a family the
 * service does not have is reported in X-Typst-Warnings.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { loadFontCatalog } from '../src/render/fonts/catalog.js';
import { renameFamily } from '../scripts/fonts/rename-family.js';
import { parsePdf } from './support/pdf.js';
import { generate, startService, TEST_KEY, type Service } from './support/service.js';

let service: Service;
before(async () => {
  service = await startService();
});
after(async () => {
  await service.stop();
});

describe('fonts over HTTP', () => {
  const cases: Array<[string, string, string]> = [
    ['Helvetica', 'weight: "bold"', 'Arimo-Bold'],
    ['Arial', 'style: "italic"', 'Arimo-Italic'],
    ['Times', 'weight: "regular"', 'Tinos-Regular'],
    ['Times New Roman', 'weight: "bold", style: "italic"', 'Tinos-BoldItalic'],
    ['Courier', 'weight: "regular"', 'Cousine-Regular'],
    ['Courier New', 'weight: "bold"', 'Cousine-Bold'],
  ];
  for (const [family, style, embedded] of cases) {
    it(`sets "${family}" (${style}) in ${embedded}, without a warning`, async () => {
      const res = await generate(service, { data: {}, template: `#set text(font: "${family}", ${style})\nInvoice 2024` });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-typst-warnings'), null);
      const pdf = await parsePdf(await res.arrayBuffer());
      assert.deepEqual(pdf.fonts, [embedded]);
    });
  }

  it('still renders a family it does not have, and says where in X-Typst-Warnings (without echoing the name)', async () => {
    const template = 'Intro\n#set text(font: "Comic Sans MS")\nHello\n#text(font: "Fütura")[x]';
    const res = await generate(service, { data: {}, template });
    assert.equal(res.status, 200);
    const unknown = 'unknown font family (not among GET /v1/fonts; Typst uses a fallback font)';
    assert.equal(res.headers.get('x-typst-warnings'), `2; line 2, column 17: ${unknown} | line 4, column 13: ${unknown}`);
    const pdf = await parsePdf(await res.arrayBuffer());
    assert.match(pdf.text[0]!, /Intro Hello/);
    assert.ok(!service.output().includes('comic sans'), 'warnings never reach the log');
  });

  it('lists every family the workers loaded, with styles and aliases', async () => {
    const res = await fetch(`${service.url}/v1/fonts`, { headers: { authorization: `Bearer ${TEST_KEY}` } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { families: Array<{ family: string; aliasOf: string | null; styles: unknown[]; typst?: string[] }> };
    const expected = loadFontCatalog().families;
    assert.deepEqual(body.families.map((f) => f.family).sort(), expected.map((f) => f.family).sort());
    const helvetica = body.families.find((f) => f.family === 'Helvetica');
    assert.equal(helvetica?.aliasOf, 'Arimo');
    assert.equal(helvetica?.styles.length, 4);
    for (const name of ['Linux Libertine', 'New Computer Modern', 'DejaVu Sans Mono', 'Roboto', 'Times New Roman']) {
      assert.ok(
        body.families.some((f) => f.family === name),
        name,
      );
    }
    // Every listed family really renders in its own font, not a fallback, on the engines that have it.
    for (const { family, typst } of body.families.filter((f) => !/Math/.test(f.family))) {
      const text = family === 'Noto Emoji' ? '😀' : 'Hg';
      for (const engine of typst ?? ['0.11', '0.14']) {
        const res = await generate(service, { data: {}, template: `#text(font: "${family}", fallback: false)[${text}]`, typst: engine });
        const pdf = await parsePdf(await res.arrayBuffer());
        assert.equal(pdf.fonts.length, 1, `${family} on ${engine}`);
      }
    }
  });

  it('requires a key for the font list', async () => {
    assert.equal((await fetch(`${service.url}/v1/fonts`)).status, 401);
  });
});

describe('FONT_PATH', () => {
  let dir: string;
  let withFonts: Service;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'font-path-'));
    mkdirSync(join(dir, 'house'));
    // The operator's font: a bundled one under a family name of its own, in a subdirectory.
    const arimo = loadFontCatalog().files.find((file) => /Arimo-1\.ttf$/.test(file))!;
    writeFileSync(join(dir, 'house', 'HouseSans-Bold.ttf'), renameFamily(readFileSync(arimo), 'House Sans'));
    writeFileSync(join(dir, 'README.txt'), 'not a font, and not named like one: ignored');
    withFonts = await startService({ FONT_PATH: dir, WORKERS: '1' });
  });
  after(async () => {
    await withFonts.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds the fonts of a directory to every worker and to GET /v1/fonts', async () => {
    const listed = (await (await fetch(`${withFonts.url}/v1/fonts`, { headers: { authorization: `Bearer ${TEST_KEY}` } })).json()) as {
      families: { family: string; source: string; styles: unknown[] }[];
    };
    assert.deepEqual(
      listed.families.find((f) => f.family === 'House Sans'),
      { family: 'House Sans', aliasOf: null, styles: [{ style: 'normal', weight: 700 }], source: 'FONT_PATH' },
    );
    const res = await generate(withFonts, { data: {}, template: '#set text(font: "House Sans", weight: "bold")\nLetterhead' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-typst-warnings'), null);
    assert.deepEqual((await parsePdf(await res.arrayBuffer())).fonts, ['Arimo-Bold']);
  });

  it('refuses to start with a file that is not a font, naming it', () => {
    const broken = mkdtempSync(join(tmpdir(), 'font-path-'));
    try {
      writeFileSync(join(broken, 'Broken.ttf'), 'this is no font');
      const result = spawnSync(process.execPath, [fileURLToPath(new URL('../src/main.js', import.meta.url))], {
        env: { PATH: process.env.PATH ?? '', PORT: '0', API_KEYS: TEST_KEY, WORKERS: '1', FONT_PATH: broken },
        encoding: 'utf8',
        // A service that starts after all is killed at the timeout, not asked to shut down (it would keep the test waiting).
        killSignal: 'SIGKILL',
        timeout: 20_000,
      });
      assert.equal(result.status, 1);
      assert.match(result.stderr, new RegExp(`FONT_PATH: ${join(broken, 'Broken.ttf')} is not a usable font`));
    } finally {
      rmSync(broken, { recursive: true, force: true });
    }
  });
});
