/**
 * Every major script prints with real glyphs from the bundled fonts, with
 * no `font:` in the template: the text layer reads back as the characters
 * sent (after NFKC, which folds Arabic presentation forms), each script is
 * set in its bundled family, and right-to-left text runs right to left.
 *
 * Text extractors put right-to-left runs back in logical order each in
 * their own way, so for those the characters are compared as a multiset
 * (none missing, none repeated) and the order is checked by position.
 * Typst 0.11.1 writes a wrong text layer for a Devanagari vowel sign drawn
 * before its consonant (ि): the glyphs print correctly, and the sample
 * avoids that sign.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { NO_RATE_LIMIT, send } from './support/hostile.js';
import { parsePdf } from './support/pdf.js';
import { startService, type Service } from './support/service.js';

// Typst's default font, Linux Libertine, covers Latin, Greek, Cyrillic and Hebrew itself (and sets the spaces).
const LIBERTINE = 'LinLibertine';
const SCRIPTS = [
  { script: 'Latin', text: 'Grüße aus Zürich', font: LIBERTINE },
  { script: 'Greek', text: 'Καλημέρα κόσμε', font: LIBERTINE },
  { script: 'Cyrillic', text: 'Съешь же ещё этих булок', font: LIBERTINE },
  { script: 'Japanese', text: '株式会社ひらがなカタカナ', font: 'NotoSansJP' },
  { script: 'Chinese (simplified)', text: '简体中文发票', font: /^NotoSans(JP|SC)$/ },
  { script: 'Chinese (traditional)', text: '繁體中文發票', font: /^NotoSans(JP|TC)$/ },
  { script: 'Korean', text: '대한민국 서울', font: 'NotoSansKR' },
  { script: 'Arabic', text: 'مرحبا بالعالم', font: 'NotoSansArabic', rtl: true },
  { script: 'Hebrew', text: 'שלום עולם', font: LIBERTINE, rtl: true },
  // Noto Sans itself covers Devanagari, and wins the fallback by its shorter name.
  { script: 'Devanagari', text: 'नमस्ते भारत', font: /^NotoSans(Devanagari)?$/ },
  { script: 'Thai', text: 'สวัสดีชาวโลก', font: 'NotoSansThai' },
];

/** NFKC, without spaces, bidi marks and the C0 controls some extractors insert around right-to-left runs. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the C0 controls are what this removes.
const IGNORED = /[\s\u0000-\u001f\u200e\u200f\u202a-\u202e]/g;
const squash = (s: string) => s.normalize('NFKC').replace(IGNORED, '');
const sorted = (s: string) => [...squash(s)].sort().join('');
/** Family part of an embedded font's name: "NotoSansJP-Bold" → "NotoSansJP", "LinLibertineB" → "LinLibertine". */
const familyOf = (name: string) => name.replace(/-.*$/, '').replace(/^LinLibertine.*$/, LIBERTINE);

let service: Service;
before(async () => {
  service = await startService({ ...NO_RATE_LIMIT, WORKERS: '1' });
});
after(async () => {
  await service.stop();
});

describe('scripts', () => {
  for (const weight of ['regular', 'bold']) {
    for (const { script, text, font, rtl } of SCRIPTS) {
      it(`${script} (${weight}) reads back as sent, set in a bundled font`, async () => {
        const answer = await send(service, { data: { text }, template: `#set text(weight: "${weight}")\n#data.text` });
        assert.equal(answer.status, 200, answer.error);
        const pdf = await parsePdf(answer.bytes!);
        if (rtl) assert.equal(sorted(pdf.text[0]!), sorted(text));
        else assert.equal(squash(pdf.text[0]!), squash(text));
        // The script's own family, and Linux Libertine at most for the spaces.
        const families = new Set(pdf.fonts.map(familyOf));
        const scriptFamilies = [...families].filter((f) => (typeof font === 'string' ? f === font : font.test(f)));
        assert.equal(scriptFamilies.length, 1, pdf.fonts.join());
        assert.ok(
          [...families].every((f) => f === scriptFamilies[0] || f === LIBERTINE),
          pdf.fonts.join(),
        );
        const bold = pdf.fonts.filter((name) => familyOf(name) === scriptFamilies[0]).every((name) => /-Bold$|^LinLibertineB/.test(name));
        assert.equal(bold, weight === 'bold', pdf.fonts.join());
      });
    }
  }

  for (const [script, first, second] of [
    ['Hebrew', 'שלום', 'עולם'],
    ['Arabic', 'مرحبا', 'بالعالم'],
  ] as const) {
    it(`${script} runs right to left: the first word stands to the right of the second`, async () => {
      const answer = await send(service, { data: {}, template: `${first} #h(2cm) ${second}` });
      assert.equal(answer.status, 200, answer.error);
      const items = (await parsePdf(answer.bytes!)).placed[0]!;
      const x = (word: string) => items.find((item) => squash(item.text) === squash(word))?.x;
      assert.ok(x(first) !== undefined && x(second) !== undefined, JSON.stringify(items));
      assert.ok(x(first)! > x(second)!, JSON.stringify(items));
    });
  }
});
