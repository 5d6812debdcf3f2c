/**
 * Fonts as clients meet them: names that templates use give the stand-in
 * fonts, GET /v1/fonts lists what the workers loaded, and a family the
 * service does not have is reported in X-Typst-Warnings.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadFontCatalog } from '../src/render/fonts/catalog.js';
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
    const body = (await res.json()) as { families: Array<{ family: string; aliasOf: string | null; styles: unknown[] }> };
    const expected = loadFontCatalog().families;
    assert.deepEqual(
      body.families.map((f) => f.family).sort(),
      expected.map((f) => f.family).sort(),
    );
    const helvetica = body.families.find((f) => f.family === 'Helvetica');
    assert.equal(helvetica?.aliasOf, 'Arimo');
    assert.equal(helvetica?.styles.length, 4);
    for (const name of ['Linux Libertine', 'New Computer Modern', 'DejaVu Sans Mono', 'Roboto', 'Times New Roman']) {
      assert.ok(body.families.some((f) => f.family === name), name);
    }
    // Every listed family really renders in its own font, not a fallback.
    for (const { family } of body.families.filter((f) => !/Math/.test(f.family))) {
      const res = await generate(service, { data: {}, template: `#text(font: "${family}", fallback: false)[Hg]` });
      const pdf = await parsePdf(await res.arrayBuffer());
      assert.equal(pdf.fonts.length, 1, family);
    }
  });

  it('requires a key for the font list', async () => {
    assert.equal((await fetch(`${service.url}/v1/fonts`)).status, 401);
  });
});
