import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { before, describe, test } from 'node:test';
import type { NodeCompiler as NodeCompilerType } from '@myriaddreamin/typst-ts-node-compiler';
import { extractFontFamilies, unknownFontWarnings } from '../src/render/font-warnings.js';
import { loadFontCatalog } from '../src/render/fonts.js';

const require = createRequire(import.meta.url);
const { NodeCompiler } = require('@myriaddreamin/typst-ts-node-compiler') as {
  NodeCompiler: typeof NodeCompilerType;
};

describe('unknown font detection', () => {
  let compiler: NodeCompilerType;

  before(() => {
    compiler = NodeCompiler.create({
      workspace: '/nonexistent-root',
      fontArgs: [{ fontBlobs: loadFontCatalog().blobs }],
    });
  });

  test('the binding itself reports no warning for an unknown family', () => {
    // Documents the limitation that font-warnings.ts works around: Typst
    // 0.11.1 has no such warning and the binding drops warnings on success.
    const compiled = compiler.compile({ mainFileContent: '#set text(font: "NoSuchFont")\nHello **' });
    assert.ok(compiled.result);
    assert.equal(compiled.takeDiagnostics(), null);
  });

  test('extracts literal family names from set rules, calls and arrays', () => {
    const source = [
      '#set text(font: "Helvetica", size: 10pt)',
      '#text(font: ("NoSuchFont", "Times New Roman"))[x]',
      '#let myfont: "ignored" = 1',
      '#set text(font:"Say \\"Hi\\"")',
      '#show raw: set text(font: ("Courier", ))',
    ].join('\n');
    assert.deepEqual(extractFontFamilies(source), ['Helvetica', 'NoSuchFont', 'Times New Roman', 'Say "Hi"', 'Courier']);
  });

  test('warns once per family that is not loaded, with the line of its first mention', () => {
    const known = new Set(loadFontCatalog().families.map((f) => f.family.toLowerCase()));
    const source = 'Intro\n#set text(font: ("NoSuchFont", "Arial"))\n#text(font: "nosuchfont")[x]\n#text(font: "Other")[y]';
    assert.deepEqual(unknownFontWarnings(source, known), [
      { message: 'unknown font family: nosuchfont', line: 2 },
      { message: 'unknown font family: other', line: 4 },
    ]);
    assert.deepEqual(unknownFontWarnings('#set text(font: "HELVETICA")', known), []);
  });
});
