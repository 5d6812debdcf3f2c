/**
 * What signing reads, against trusted oracles, with fast-check: the PDF
 * syntax the incremental update walks (finish/signature-pdf-syntax.ts)
 * against the generator's own serialization of random PDF values, with
 * comments, odd white space and strings full of delimiters; any bytes at all
 * are read or refused with a PdfSyntaxError, never anything else, and deep
 * nesting takes linear time without recursion. `pdf.signature` in the body
 * check against JSON.parse, and the PDF text strings made of its texts
 * against their decoding.
 * FUZZ_SCALE multiplies the case counts (the nightly set runs more).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { checkBody } from '../src/bytes/json-check.js';
import type { Range } from '../src/bytes/layout.js';
import { pdfTextString } from '../src/finish/signature-text.js';
import { appendSignatureUpdate } from '../src/finish/signature-update.js';
import { dictionaryAt, PdfSyntaxError, valueEnd } from '../src/finish/signature-pdf-syntax.js';
import { MESSAGES, signatureText } from '../src/messages.js';

const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));

/** White space between tokens: none where a delimiter allows, else blanks, line ends, comments. */
const space = fc.constantFrom(' ', '\n', '\r\n', '\t', '  ', ' %comment ) >> ]\n', '\f', '\0');

const name = fc.stringMatching(/^\/[A-Za-z0-9#._-]{0,12}$/);
/** Literal strings with balanced parentheses (as writers make them) and every escape. */
const literal = fc
  .array(fc.constantFrom('a', ' ', '\\(', '\\)', '\\\\', '\\n', '\\053', '>>', ']', '%', '/', '<', '\n', '()', '(x)', '((y))'), {
    maxLength: 12,
  })
  .map((parts) => `(${parts.join('')})`);
const hex = fc.stringMatching(/^[0-9A-Fa-f \n]{0,16}$/).map((digits) => `<${digits}>`);
const numberToken = fc.oneof(fc.nat().map(String), fc.constantFrom('-1', '+2', '3.5', '.5', '-0.25'));
const ref = fc.tuple(fc.nat({ max: 99999 }), fc.nat({ max: 65535 })).map(([n, g]) => `${n} ${g} R`);
const keyword = fc.constantFrom('true', 'false', 'null');

/** A PDF value as text, with white space of all kinds around the tokens of dictionaries and arrays. */
const { value } = fc.letrec<{ value: string; array: string; dict: string }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, name, literal, hex, numberToken, ref, keyword, tie('array'), tie('dict')),
  array: fc.array(fc.tuple(space, tie('value')), { maxLength: 5 }).map((items) => `[${items.map(([s, v]) => `${s}${v} `).join('')}]`),
  dict: fc
    .array(
      fc.tuple(
        name.filter((n) => n.length > 1),
        space,
        tie('value'),
        space,
      ),
      { maxLength: 5 },
    )
    .map((entries) => `<<${entries.map(([k, s, v, t]) => ` ${k}${s}${v}${t}`).join('')}>>`),
}));

describe('PDF syntax the signature reads', () => {
  it('finds each entry of a dictionary exactly where it was written', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            name.filter((n) => n.length > 1),
            space,
            value,
            space,
          ),
          { maxLength: 8 },
        ),
        fc.string({ maxLength: 3 }),
        (entries, trailing) => {
          let text = '<<';
          const expected: { key: string; value: string }[] = [];
          for (const [key, before, v, after] of entries) {
            text += ` ${key}${before}`;
            expected.push({ key, value: v });
            text += `${v}${after}`;
          }
          text += '>>';
          const bytes = Buffer.from(`${text}${trailing}`, 'latin1');
          const { entries: found, end } = dictionaryAt(bytes, 0);
          assert.equal(end, text.length);
          assert.deepEqual(
            found.map((e) => ({
              key: bytes.toString('latin1', e.key.start, e.key.end),
              value: bytes.toString('latin1', e.value.start, e.value.end),
            })),
            expected,
          );
          assert.equal(valueEnd(bytes, 0), text.length);
        },
      ),
      { numRuns: runs(3000) },
    );
  });

  it('reads any bytes or refuses them with a PdfSyntaxError, within bounds', () => {
    const mutated = fc
      .tuple(value, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }))
      .map(([text, edits]) => {
        const bytes = Buffer.from(`<< /K ${text} >>`, 'latin1');
        for (const [at, byte] of edits) bytes[at % bytes.length] = byte;
        return bytes;
      });
    fc.assert(
      fc.property(
        fc.oneof(
          mutated,
          fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.concat([Buffer.from('<<'), b])),
        ),
        (bytes) => {
          try {
            const { entries, end } = dictionaryAt(bytes, 0);
            assert.ok(end <= bytes.length);
            for (const e of entries) assert.ok(e.key.start < e.key.end && e.value.start < e.value.end && e.value.end <= end);
          } catch (error) {
            assert.ok(error instanceof PdfSyntaxError, String(error));
          }
        },
      ),
      { numRuns: runs(5000) },
    );
  });

  it('walks deep nesting without recursion, in linear time', () => {
    const timed = (depth: number) => {
      const bytes = Buffer.from(`${'[<<'.repeat(depth)}${'>>]'.repeat(depth)}`, 'latin1');
      const started = performance.now();
      assert.equal(valueEnd(bytes, 0), bytes.length);
      return performance.now() - started;
    };
    timed(10_000);
    const small = Math.min(timed(200_000), timed(200_000));
    const large = Math.min(timed(800_000), timed(800_000));
    assert.ok(large < small * 12, `4 times the nesting took ${(large / small).toFixed(1)} times as long`);
  });
});

describe('the objects of a damaged PDF', () => {
  /** A small PDF whose last section is a cross-reference stream, with object streams, as qpdf writes one. */
  const pdf = Buffer.from(
    '%PDF-1.5\n1 0 obj\n<</Type /Catalog /Pages 2 0 R>>\nendobj\n2 0 obj\n<</Type /Pages /Kids [3 0 R] /Count 1>>\nendobj\n' +
      '3 0 obj\n<</Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] /Annots [<</Subtype /Link /Rect [0 0 1 1]>>]>>\nendobj\n',
    'latin1',
  );
  const offsets = [9, pdf.indexOf('2 0 obj'), pdf.indexOf('3 0 obj')];
  const rows = Buffer.alloc(5 * 4);
  rows.writeUInt8(0, 0);
  offsets.forEach((offset, i) => {
    rows.writeUInt8(1, 4 * (i + 1));
    rows.writeUInt16BE(offset, 4 * (i + 1) + 1);
  });
  rows.writeUInt8(1, 16);
  rows.writeUInt16BE(pdf.length, 17);
  /** The cross-reference stream: plain, or compressed with the PNG Up predictor as qpdf and Typst-era writers make it. */
  const xrefStream = (compressed: boolean) => {
    let data = rows;
    let extra = '';
    if (compressed) {
      const predicted = Buffer.alloc(5 * 5);
      for (let r = 0; r < 5; r++) {
        predicted[r * 5] = 2;
        for (let c = 0; c < 4; c++) predicted[r * 5 + 1 + c] = (rows[r * 4 + c]! - (r > 0 ? rows[(r - 1) * 4 + c]! : 0)) & 0xff;
      }
      data = deflateSync(predicted);
      extra = ' /Filter /FlateDecode /DecodeParms <</Predictor 12 /Columns 4>>';
    }
    return Buffer.concat([
      pdf,
      Buffer.from(`4 0 obj\n<</Type /XRef /Size 5 /Root 1 0 R /W [1 2 1]${extra} /Length ${data.length}>>\nstream\n`, 'latin1'),
      data,
      Buffer.from(`\nendstream\nendobj\nstartxref\n${pdf.length}\n%%EOF\n`, 'latin1'),
    ]);
  };
  const files = [xrefStream(false), xrefStream(true)];

  it('reads the undamaged files, plain and compressed', () => {
    for (const whole of files) {
      const update = appendSignatureUpdate(whole, {}, 64, new Date(0));
      assert.ok(update.pdf.subarray(0, whole.length).equals(whole));
      assert.match(update.pdf.toString('latin1', whole.length), /\/Type \/XRef/);
      // The first page again, its link kept and the widget after it.
      assert.match(update.pdf.toString('latin1', whole.length), /\/Annots \[<<\/Subtype \/Link \/Rect \[0 0 1 1\]>> 5 0 R\]/);
    }
  });

  it('reads any damage to its structure, or refuses it with a PdfSyntaxError, without hanging', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...files),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 6 }),
        (whole, edits) => {
          const damaged = Buffer.from(whole);
          for (const [at, byte] of edits) damaged[at % damaged.length] = byte;
          try {
            const update = appendSignatureUpdate(damaged, {}, 64, new Date(0));
            assert.ok(update.pdf.subarray(0, damaged.length).equals(damaged));
          } catch (error) {
            assert.ok(error instanceof PdfSyntaxError, String(error));
          }
        },
      ),
      { numRuns: runs(3000) },
    );
  });
});

/** A PDF text string decoded: a literal's escapes undone, or UTF-16BE after its byte order mark. */
function decodePdfText(bytes: Buffer): string {
  const text = bytes.toString('latin1');
  if (text.startsWith('<')) {
    assert.match(text, /^<FEFF([0-9A-F]{4})*>$/);
    return Buffer.from(text.slice(5, -1), 'hex').swap16().toString('utf16le');
  }
  assert.match(text, /^\(.*\)$/s);
  return text.slice(1, -1).replace(/\\(.)/g, '$1');
}

describe('pdf.signature in the body', () => {
  const body = (signature: unknown) => Buffer.from(JSON.stringify({ data: {}, template: 'x', pdf: { signature } }));
  const texts = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.string({ unit: 'grapheme', maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 300 }),
  );
  const member = fc.oneof(texts, fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string(), { maxLength: 2 }));
  const keys = fc.oneof(fc.constantFrom('reason', 'location', 'contact'), fc.string({ maxLength: 8 }));
  const isWellFormed = (s: string) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

  it('is taken exactly when JSON.parse finds known keys with strings of at most 256 characters; its texts decode to them', () => {
    fc.assert(
      fc.property(fc.dictionary(keys, member, { maxKeys: 4 }), (signature) => {
        const check = checkBody(body(signature));
        const entries = Object.entries(signature);
        const unknown = entries.find(([k]) => !['reason', 'location', 'contact'].includes(k));
        const badText = entries.find(([, v]) => typeof v !== 'string' || [...v].length > 256 || !isWellFormed(v));
        if (unknown || badText) {
          assert.equal(check.ok, false);
          const messages = [MESSAGES.pdfSignatureKey, ...['reason', 'location', 'contact'].map((f) => signatureText(f as 'reason'))];
          assert.ok(!check.ok && 'message' in check.error && messages.includes(check.error.message));
          return;
        }
        if (!check.ok) assert.fail(JSON.stringify(check));
        const bytes = body(signature);
        const found = check.layout.signature ?? {};
        for (const [key, text] of entries) {
          const range: Range | undefined = found[key as 'reason'];
          assert.ok(range);
          assert.equal(decodePdfText(pdfTextString(bytes, range)), text);
        }
      }),
      { numRuns: runs(2000) },
    );
  });

  it('is refused when it is not an object', () => {
    for (const signature of [true, 1, 'yes', [], null]) {
      const check = checkBody(body(signature));
      assert.ok(!check.ok && 'message' in check.error && check.error.message === MESSAGES.pdfSignature, JSON.stringify(signature));
    }
  });
});
