import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { before, describe, test } from 'node:test';
import type { NodeCompiler as NodeCompilerType } from '@myriaddreamin/typst-ts-node-compiler';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { loadFontCatalog } from '../src/render/fonts/catalog.js';
import type { FontCatalog } from '../src/render/fonts/types.js';
import { getFamilyName } from '../src/render/fonts/sfnt-name.js';
import { verifyChecksums } from '../scripts/fonts/sfnt-rebuild.js';

const require = createRequire(import.meta.url);
const { NodeCompiler } = require('@myriaddreamin/typst-ts-node-compiler') as {
  NodeCompiler: typeof NodeCompilerType;
};

const STYLES = [
  { weight: 'regular', style: 'normal', psSuffix: 'Regular' },
  { weight: 'bold', style: 'normal', psSuffix: 'Bold' },
  { weight: 'regular', style: 'italic', psSuffix: 'Italic' },
  { weight: 'bold', style: 'italic', psSuffix: 'BoldItalic' },
] as const;

const ALIASES: Record<string, string> = {
  Helvetica: 'Arimo',
  Arial: 'Arimo',
  Times: 'Tinos',
  'Times New Roman': 'Tinos',
  Courier: 'Cousine',
  'Courier New': 'Cousine',
};

function compilePdf(compiler: NodeCompilerType, source: string): Buffer {
  const compiled = compiler.compile({ mainFileContent: source });
  const doc = compiled.result;
  if (!doc) throw new Error(`compile failed: ${JSON.stringify(compiled.takeDiagnostics()?.shortDiagnostics)}`);
  return compiler.pdf(doc);
}

/** Names (PostScript names, with subset tag) of the fonts used by text on page 1. */
async function usedFontNames(pdf: Buffer): Promise<string[]> {
  const doc = await getDocument({ data: new Uint8Array(pdf), disableFontFace: true, verbosity: 0 }).promise;
  try {
    const page = await doc.getPage(1);
    await page.getOperatorList(); // loads the font objects into commonObjs
    const content = await page.getTextContent();
    const ids = new Set(content.items.flatMap((item) => ('fontName' in item && item.str.trim() ? [item.fontName] : [])));
    return [...ids].map((id) => (page.commonObjs.get(id) as { name: string }).name);
  } finally {
    await doc.destroy();
  }
}

/** Evaluates width expressions in Typst and returns them in pt. */
function measure(compiler: NodeCompilerType, exprs: Record<string, string>): Record<string, number> {
  const fields = Object.entries(exprs)
    .map(([key, expr]) => `${key}: measure(${expr}).width.pt()`)
    .join(', ');
  const compiled = compiler.compile({ mainFileContent: `#context [#metadata((${fields}))<m>]` });
  assert.ok(compiled.result, 'measure document compiles');
  const [value] = compiler.query(compiled.result, { selector: '<m>', field: 'value' }) as [Record<string, number>];
  return value;
}

describe('font catalog', () => {
  let catalog: FontCatalog;
  let compiler: NodeCompilerType;

  before(() => {
    catalog = loadFontCatalog();
    compiler = NodeCompiler.create({ workspace: '/nonexistent-root', fontArgs: [{ fontPaths: catalog.files }] });
  });

  test('lists bundled families, aliases and Typst built-ins', () => {
    const byName = new Map(catalog.families.map((f) => [f.family, f]));
    for (const [alias, target] of Object.entries(ALIASES)) {
      assert.equal(byName.get(alias)?.aliasOf, target);
    }
    for (const family of ['Arimo', 'Tinos', 'Cousine', 'Roboto', 'Inter', 'Open Sans', 'Lato', 'Noto Sans', 'Noto Serif']) {
      const info = byName.get(family);
      assert.ok(info, family);
      assert.equal(info.aliasOf, null);
      assert.match(info.source, /^@expo-google-fonts\//);
      assert.deepEqual(info.styles.map((s) => `${s.style} ${s.weight}`).sort(), ['italic 400', 'italic 700', 'normal 400', 'normal 700']);
    }
    for (const family of ['Linux Libertine', 'Libertinus Serif', 'New Computer Modern', 'New Computer Modern Math', 'DejaVu Sans Mono']) {
      assert.equal(byName.get(family)?.source, 'typst');
      assert.equal(byName.get(family)?.aliasOf, null);
    }
    // Typst 0.14 replaced Linux Libertine with Libertinus Serif.
    assert.deepEqual(byName.get('Linux Libertine')?.typst, ['0.11']);
    assert.deepEqual(byName.get('Libertinus Serif')?.typst, ['0.14']);
    assert.equal(byName.get('New Computer Modern')?.typst, undefined);
    for (const family of [
      'Noto Sans JP',
      'Noto Sans SC',
      'Noto Sans TC',
      'Noto Sans KR',
      'Noto Sans Arabic',
      'Noto Sans Hebrew',
      'Noto Sans Devanagari',
      'Noto Sans Thai',
      'Noto Emoji',
    ]) {
      assert.deepEqual(
        byName.get(family)?.styles.map((s) => `${s.style} ${s.weight}`),
        ['normal 400', 'normal 700'],
        family,
      );
    }
    // 9 families x 4 styles, 6 aliases x 4 styles, 8 script families and Noto Emoji x 2 weights.
    assert.equal(catalog.files.length, 78);
  });

  test('every file is a consistent font named after its family or alias', () => {
    const expected = new Map<string, number>();
    for (const f of catalog.families) if (f.source !== 'typst') expected.set(f.family, f.styles.length);
    const seen = new Map<string, number>();
    for (const blob of catalog.files.map((file) => readFileSync(file))) {
      assert.deepEqual(verifyChecksums(blob), []);
      const family = getFamilyName(blob);
      seen.set(family, (seen.get(family) ?? 0) + 1);
    }
    assert.deepEqual(seen, expected);
  });

  for (const [alias, target] of Object.entries(ALIASES)) {
    for (const s of STYLES) {
      test(`"${alias}" ${s.weight} ${s.style} embeds ${target}-${s.psSuffix}`, async () => {
        const pdf = compilePdf(compiler, `#set text(font: "${alias}", weight: "${s.weight}", style: "${s.style}", fallback: false)\nHello`);
        const names = await usedFontNames(pdf);
        assert.equal(names.length, 1, names.join());
        assert.match(names[0]!, new RegExp(`^[A-Z]{6}\\+${target}-${s.psSuffix}$`));
      });
    }
  }

  test('original family names keep working', async () => {
    for (const family of ['Arimo', 'Tinos', 'Cousine', 'Roboto', 'Inter', 'Open Sans', 'Lato', 'Noto Sans', 'Noto Serif']) {
      const pdf = compilePdf(compiler, `#set text(font: "${family}", weight: "bold", style: "italic", fallback: false)\nHello`);
      const names = await usedFontNames(pdf);
      assert.deepEqual(
        names.map((n) => n.replace(/^[A-Z]{6}\+/, '')),
        [`${family.replace(/ /g, '')}-BoldItalic`],
      );
    }
  });

  test('aliases are unknown without the catalog (control)', async () => {
    const bare = NodeCompiler.create({ workspace: '/nonexistent-root' });
    const names = await usedFontNames(compilePdf(bare, '#set text(font: "Helvetica")\nHello'));
    assert.ok(
      names.every((n) => !n.includes('Arimo')),
      names.join(),
    );
  });

  test('alias advance widths equal the original and the classic metrics', () => {
    const str = '"Hello"';
    const w = measure(compiler, {
      helvetica: `text(font: "Helvetica", size: 10pt, kerning: false, ${str})`,
      arimo: `text(font: "Arimo", size: 10pt, kerning: false, ${str})`,
      helveticaBold: `text(font: "Helvetica", weight: "bold", size: 10pt, kerning: false, ${str})`,
      times: `text(font: "Times", size: 10pt, kerning: false, ${str})`,
      tinos: `text(font: "Tinos", size: 10pt, kerning: false, ${str})`,
      courier: `text(font: "Courier New", size: 10pt, kerning: false, ${str})`,
      serif: `text(size: 10pt, kerning: false, ${str})`,
    });
    assert.equal(w.helvetica, w.arimo);
    assert.equal(w.times, w.tinos);
    assert.notEqual(w.helvetica, w.serif);
    assert.notEqual(w.times, w.serif);
    // Sums of the Adobe standard-14 AFM widths (1/1000 em) at 10pt: Helvetica
    // H722 e556 l222 l222 o556; Helvetica-Bold H722 e556 l278 l278 o611;
    // Times-Roman H722 e444 l278 l278 o500; Courier 5 x 600.
    const close = (actual: number, expected: number) => assert.ok(Math.abs(actual - expected) < 0.02, `${actual} != ${expected}`);
    close(w.helvetica!, 22.78);
    close(w.helveticaBold!, 24.45);
    close(w.times!, 22.22);
    close(w.courier!, 30);
  });

  test('a longer string measures the same in Helvetica and Arimo (with kerning)', () => {
    const s = '"The quick brown fox jumps over the lazy dog. AVAWATAY 0123456789"';
    const w = measure(compiler, {
      helvetica: `text(font: "Helvetica", size: 10pt, ${s})`,
      arimo: `text(font: "Arimo", size: 10pt, ${s})`,
      serif: `text(size: 10pt, ${s})`,
    });
    assert.equal(w.helvetica, w.arimo);
    assert.ok(w.helvetica! > 0);
    assert.notEqual(w.helvetica, w.serif);
  });
});
