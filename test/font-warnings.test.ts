import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { before, describe, test } from 'node:test';
import type { NodeCompiler as NodeCompilerType } from '@myriaddreamin/typst-ts-node-compiler';
import { UNKNOWN_FONT } from '../src/messages.js';
import { FamilyNames, unknownFontWarnings } from '../src/render/fonts/warnings.js';
import { loadFontCatalog } from '../src/render/fonts/catalog.js';

const require = createRequire(import.meta.url);
const { NodeCompiler } = require('@myriaddreamin/typst-ts-node-compiler') as {
  NodeCompiler: typeof NodeCompilerType;
};

describe('unknown font detection', () => {
  let compiler: NodeCompilerType;

  before(() => {
    compiler = NodeCompiler.create({
      workspace: '/nonexistent-root',
      fontArgs: [{ fontPaths: loadFontCatalog().files }],
    });
  });

  test('the binding itself reports no warning for an unknown family', () => {
    // Documents the limitation that src/render/fonts/warnings.ts works around: Typst
    // 0.11.1 has no such warning and the binding drops warnings on success.
    const compiled = compiler.compile({ mainFileContent: '#set text(font: "NoSuchFont")\nHello **' });
    assert.ok(compiled.result);
    assert.equal(compiled.takeDiagnostics(), null);
  });

  test('finds literal family names in set rules, calls and arrays, and only those', () => {
    const source = [
      '#set text(font: "Helvetica", size: 10pt)',
      '#text(font: ("NoSuchFont", "Times New Roman"))[x]',
      '#let myfont: "ignored" = 1',
      '#set text(font:"Say \\"Hi\\"")',
      '#show raw: set text(font: ("Courier", ))',
    ].join('\n');
    const known = new FamilyNames(['Helvetica', 'Times New Roman', 'Courier', 'Say "Hi"']);
    assert.deepEqual(unknownFontWarnings(Buffer.from(source), known), [{ message: UNKNOWN_FONT, line: 2, column: 14 }]);
    assert.deepEqual(unknownFontWarnings(Buffer.from(source), new FamilyNames(['NoSuchFont', 'Times New Roman', 'Courier', 'Say "Hi"'])), [
      { message: UNKNOWN_FONT, line: 1, column: 17 },
    ]);
  });

  test('warns once per family that is not loaded, at its first mention, comparing names case-insensitively', () => {
    const known = new FamilyNames(loadFontCatalog().families.map((f) => f.family));
    const source = 'Intro\n#set text(font: ("NoSuchFont", "Arial"))\n#text(font: "nosuchfont")[x]\n#text(font: "Ótherß")[y]';
    assert.deepEqual(unknownFontWarnings(Buffer.from(source), known), [
      { message: UNKNOWN_FONT, line: 2, column: 18 },
      { message: UNKNOWN_FONT, line: 4, column: 13 },
    ]);
    assert.deepEqual(unknownFontWarnings(Buffer.from('#set text(font: "HELVETICA")'), known), []);
  });

  test('counts lines ended by CRLF or CR, and columns in characters', () => {
    const known = new FamilyNames(['Arial']);
    assert.deepEqual(unknownFontWarnings(Buffer.from('a\r\nb\rÄÖ #text(font: "X")[y]'), known), [
      { message: UNKNOWN_FONT, line: 3, column: 16 },
    ]);
  });
});
