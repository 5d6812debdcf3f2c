/**
 * The one PDF reader and update writer of src/finish/ against oracles, with
 * fast-check:
 *
 * - syntax: any value the writer writes reads back equal; literal strings
 *   as other writers escape them read back as their bytes; a dictionary's
 *   entries are found exactly where a generator wrote them, with comments,
 *   odd white space and strings full of delimiters around them;
 * - structure: objects appended in one update and another after it read
 *   back as written, and qpdf finds no error; what qpdf, another PDF
 *   parser, reads of every object equals what this reader reads, in a file
 *   with classic tables and in the same file rewritten by qpdf with a
 *   cross-reference stream and object streams (and updated after that);
 * - adversarial shapes: any bytes, and any damage to a file's structure,
 *   are read or refused with a PdfSyntaxError, never another error; deep
 *   nesting takes linear time, without recursion.
 *
 * FUZZ_SCALE multiplies the case counts (the nightly set runs more).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { appendUpdate, valueObject } from '../src/finish/incremental-update.js';
import { PdfObjects } from '../src/finish/pdf-objects.js';
import { dictionaryAt, PdfSyntaxError, valueEnd } from '../src/finish/pdf-syntax.js';
import { PdfName, PdfRef, PdfString, type PdfValue, readValue, writeValue } from '../src/finish/pdf-values.js';
import { appendSignatureUpdate } from '../src/finish/signature-update.js';
import { runs } from './support/fuzz-scale.js';

const bytes = fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b));
const value: fc.Arbitrary<PdfValue> = fc.letrec<{ value: PdfValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.boolean(),
    fc.constant(null),
    fc.string({ maxLength: 12 }).map((s) => new PdfName(Buffer.from(s, 'utf8').toString('latin1'))),
    bytes.map((b) => new PdfString(b)),
    fc.integer({ min: 1, max: 3 }).map((n) => new PdfRef(n, 0)),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.array(fc.tuple(fc.string({ minLength: 1, maxLength: 8 }), tie('value')), { maxLength: 5 }).map((entries) => new Map(entries)),
  ),
})).value;

/** Values qpdf's JSON shows as they are: strings and names of letters (`u:text`, `/Name`), integers. */
const letters = fc.stringMatching(/^[A-Za-z]{1,8}$/);
const simple: fc.Arbitrary<PdfValue> = fc.letrec<{ value: PdfValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.boolean(),
    fc.constant(null),
    letters.map((s) => new PdfName(s)),
    letters.map((s) => new PdfString(Buffer.from(s))),
    fc.integer({ min: 1, max: 3 }).map((n) => new PdfRef(n, 0)),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.array(fc.tuple(letters, tie('value')), { maxLength: 4 }).map((entries) => new Map(entries)),
  ),
})).value;

/** A value as plain data, to compare what was written with what was read. */
function plain(v: PdfValue): unknown {
  if (v instanceof PdfName) return { name: v.name };
  if (v instanceof PdfString) return { string: v.bytes.toString('hex') };
  if (v instanceof PdfRef) return { ref: [v.num, v.gen] };
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]));
  return v;
}

/** A value as qpdf's JSON (version 2) shows it: printable strings as `u:text`, others (a file's /ID) as `b:hex`. */
function asQpdf(v: PdfValue): unknown {
  if (v instanceof PdfName) return `/${v.name}`;
  if (v instanceof PdfString) {
    return v.bytes.every((b) => b >= 0x20 && b < 0x7f) ? `u:${v.bytes.toString('latin1')}` : `b:${v.bytes.toString('hex')}`;
  }
  if (v instanceof PdfRef) return `${v.num} ${v.gen} R`;
  if (Array.isArray(v)) return v.map(asQpdf);
  // A dictionary entry whose value is null is no entry (ISO 32000-1, 7.3.7).
  if (v instanceof Map) return Object.fromEntries([...v].filter(([, x]) => x !== null).map(([k, x]) => [`/${k}`, asQpdf(x)]));
  return v;
}

/** Literal strings as other writers write them: the oracle is the byte string itself. */
const literal = (b: Buffer) => `(${[...b].map((x) => `\\${x.toString(8).padStart(3, '0')}`).join('')})`;

/** A small PDF with a classic cross-reference table, as Typst writes them. */
const base = (() => {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >>',
  ];
  let pdf = '%PDF-1.7\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(pdf.length);
    pdf += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f\r\n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n\r\n`).join('')}`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /ID [<01> <02>] >>\nstartxref\n${xref}\n%%EOF`;
  return Buffer.from(pdf, 'latin1');
})();

const dir = mkdtempSync(join(tmpdir(), 'pdf-reader-'));
after(() => rmSync(dir, { recursive: true }));

/** Every object qpdf reads in `pdf`: its value (a stream's dictionary), by object number. */
function qpdfObjects(pdf: Buffer): Map<number, unknown> {
  writeFileSync(join(dir, 'q.pdf'), pdf);
  const json = JSON.parse(execFileSync('qpdf', ['--json=2', '--json-key=qpdf', join(dir, 'q.pdf')], { encoding: 'utf8' })) as {
    qpdf: [unknown, Record<string, { value?: unknown; stream?: { dict: unknown } }>];
  };
  const out = new Map<number, unknown>();
  for (const [key, object] of Object.entries(json.qpdf[1])) {
    const num = /^obj:(\d+) 0 R$/.exec(key)?.[1];
    if (num) out.set(Number(num), 'value' in object ? object.value : object.stream?.dict);
  }
  return out;
}

/** `pdf` rewritten by qpdf with a cross-reference stream and object streams, as Typst-era and other writers make them. */
function withObjectStreams(pdf: Buffer): Buffer {
  writeFileSync(join(dir, 'in.pdf'), pdf);
  execFileSync('qpdf', ['--object-streams=generate', join(dir, 'in.pdf'), join(dir, 'out.pdf')]);
  return readFileSync(join(dir, 'out.pdf'));
}

/** Every object qpdf reads in `pdf` is read the same by PdfObjects (a stream: its dictionary, /Length aside). */
function assertSameObjects(pdf: Buffer): number {
  const objects = new PdfObjects(pdf);
  let compared = 0;
  try {
    for (const [num, expected] of qpdfObjects(pdf)) {
      const read = objects.read(objects.value({ num, gen: 0 }));
      const dropLength = (v: unknown) =>
        v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([k]) => k !== '/Length')) : v;
      assert.deepEqual(dropLength(asQpdf(read)), dropLength(expected), `object ${num}`);
      compared++;
    }
  } finally {
    objects.wipe();
  }
  return compared;
}

describe('PDF syntax', () => {
  it('reads back every value it writes', () => {
    fc.assert(
      fc.property(value, (v) => {
        const written = writeValue(v);
        const { value: read, end } = readValue(written, 0, []);
        assert.deepEqual(plain(read), plain(v));
        assert.equal(end, written.length);
        assert.equal(valueEnd(written, 0), written.length);
      }),
      { numRuns: runs(500) },
    );
  });

  it('reads literal strings with octal escapes, nested parentheses and line continuations, and keeps them to be wiped', () => {
    fc.assert(
      fc.property(bytes, (b) => {
        const strings: Buffer[] = [];
        const read = readValue(Buffer.from(literal(b)), 0, strings).value as PdfString;
        assert.deepEqual(read.bytes, b);
        assert.equal(strings.length, 1);
      }),
      { numRuns: runs(100) },
    );
    assert.deepEqual((readValue(Buffer.from('(a(b)c\\\n\\)\\n)'), 0, []).value as PdfString).bytes, Buffer.from('a(b)c)\n'));
  });

  /** White space between tokens: none where a delimiter allows, else blanks, line ends, comments. */
  const space = fc.constantFrom(' ', '\n', '\r\n', '\t', '  ', ' %comment ) >> ]\n', '\f', '\0');
  const nameText = fc.stringMatching(/^\/[A-Za-z0-9#._-]{0,12}$/);
  /** Literal strings with balanced parentheses (as writers make them) and every escape. */
  const literalText = fc
    .array(fc.constantFrom('a', ' ', '\\(', '\\)', '\\\\', '\\n', '\\053', '>>', ']', '%', '/', '<', '\n', '()', '(x)', '((y))'), {
      maxLength: 12,
    })
    .map((parts) => `(${parts.join('')})`);
  const hexText = fc.stringMatching(/^[0-9A-Fa-f \n]{0,16}$/).map((digits) => `<${digits}>`);
  const numberText = fc.oneof(fc.nat().map(String), fc.constantFrom('-1', '+2', '3.5', '.5', '-0.25'));
  const refText = fc.tuple(fc.nat({ max: 99999 }), fc.nat({ max: 65535 })).map(([n, g]) => `${n} ${g} R`);
  const keyword = fc.constantFrom('true', 'false', 'null');
  /** A PDF value as text, with white space of all kinds around the tokens of dictionaries and arrays. */
  const { text } = fc.letrec<{ text: string; array: string; dict: string }>((tie) => ({
    text: fc.oneof({ depthSize: 'small' }, nameText, literalText, hexText, numberText, refText, keyword, tie('array'), tie('dict')),
    array: fc.array(fc.tuple(space, tie('text')), { maxLength: 5 }).map((items) => `[${items.map(([s, v]) => `${s}${v} `).join('')}]`),
    dict: fc
      .array(
        fc.tuple(
          nameText.filter((n) => n.length > 1),
          space,
          tie('text'),
          space,
        ),
        { maxLength: 5 },
      )
      .map((entries) => `<<${entries.map(([k, s, v, t]) => ` ${k}${s}${v}${t}`).join('')}>>`),
  }));

  it('finds each entry of a dictionary exactly where it was written, and reads it whole as values', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            nameText.filter((n) => n.length > 1),
            space,
            text,
            space,
          ),
          { maxLength: 8 },
        ),
        fc.string({ maxLength: 3 }),
        (entries, trailing) => {
          let written = '<<';
          const expected: { key: string; value: string }[] = [];
          for (const [key, before, v, after] of entries) {
            written += ` ${key}${before}`;
            expected.push({ key, value: v });
            written += `${v}${after}`;
          }
          written += '>>';
          const pdf = Buffer.from(`${written}${trailing}`, 'latin1');
          const { entries: found, end } = dictionaryAt(pdf, 0);
          assert.equal(end, written.length);
          assert.deepEqual(
            found.map((e) => ({
              key: pdf.toString('latin1', e.key.start, e.key.end),
              value: pdf.toString('latin1', e.value.start, e.value.end),
            })),
            expected,
          );
          assert.equal(valueEnd(pdf, 0), written.length);
          // The value reader ends where the span reader does, or refuses a name's malformed `#` escape.
          try {
            assert.equal(readValue(pdf, 0, []).end, written.length);
          } catch (error) {
            assert.ok(error instanceof PdfSyntaxError && /#/.test(written), String(error));
          }
        },
      ),
      { numRuns: runs(3000) },
    );
  });

  it('reads any bytes or refuses them with a PdfSyntaxError, within bounds', () => {
    const mutated = fc
      .tuple(text, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }))
      .map(([written, edits]) => {
        const pdf = Buffer.from(`<< /K ${written} >>`, 'latin1');
        for (const [at, byte] of edits) pdf[at % pdf.length] = byte;
        return pdf;
      });
    const refusedOrRead = (read: () => void) => {
      try {
        read();
      } catch (error) {
        assert.ok(error instanceof PdfSyntaxError, String(error));
      }
    };
    fc.assert(
      fc.property(
        fc.oneof(
          mutated,
          fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.concat([Buffer.from('<<'), b])),
          fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
        ),
        (pdf) => {
          refusedOrRead(() => {
            const { entries, end } = dictionaryAt(pdf, 0);
            assert.ok(end <= pdf.length);
            for (const e of entries) assert.ok(e.key.start < e.key.end && e.value.start < e.value.end && e.value.end <= end);
          });
          refusedOrRead(() => assert.ok(readValue(pdf, 0, []).end <= pdf.length));
          refusedOrRead(() => new PdfObjects(pdf).wipe());
        },
      ),
      { numRuns: runs(5000) },
    );
  });

  it('walks deep nesting without recursion, in linear time; the value reader refuses it at once', () => {
    const timed = (depth: number) => {
      const pdf = Buffer.from(`${'[<<'.repeat(depth)}${'>>]'.repeat(depth)}`, 'latin1');
      const started = performance.now();
      assert.equal(valueEnd(pdf, 0), pdf.length);
      return performance.now() - started;
    };
    timed(10_000);
    const small = Math.min(timed(200_000), timed(200_000));
    const large = Math.min(timed(800_000), timed(800_000));
    assert.ok(large < small * 12, `4 times the nesting took ${(large / small).toFixed(1)} times as long`);
    assert.throws(() => readValue(Buffer.from('['.repeat(100_000)), 0, []), PdfSyntaxError);
    assert.throws(() => readValue(Buffer.from(`(${'('.repeat(200_000)}`), 0, []), PdfSyntaxError);
  });
});

describe('PDF structure and incremental updates', () => {
  it('reads back what an update (and an update after it) wrote, and qpdf finds no error', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(value, fc.option(bytes, { nil: undefined })), { minLength: 1, maxLength: 4 }), (items) => {
        const catalog = new Map<string, PdfValue>([
          ['Type', new PdfName('Catalog')],
          ['Pages', new PdfRef(2, 0)],
        ]);
        const once = appendUpdate(new PdfObjects(base), [valueObject(1, catalog)]).pdf;
        const structure = new PdfObjects(once);
        // The writer wipes the streams it was given: each gets a copy, the original is the oracle.
        const objects = items.map(([v, stream], i) => ({
          num: structure.size + i,
          value: stream ? new Map([['X', v]]) : [v],
          stream,
        }));
        const twice = appendUpdate(
          structure,
          objects.map((o) => valueObject(o.num, o.value, o.stream && Buffer.from(o.stream))),
        ).pdf;
        const read = new PdfObjects(twice);
        assert.equal(read.size, structure.size + items.length);
        for (const object of objects) {
          const found = read.read(read.value({ num: object.num, gen: 0 }));
          assert.deepEqual(plain(found instanceof Map ? new Map([...found].filter(([k]) => k !== 'Length')) : found), plain(object.value));
          if (object.stream) assert.deepEqual(read.streamData({ num: object.num, gen: 0 }), object.stream);
        }
        read.wipe();
        writeFileSync(join(dir, 'a.pdf'), twice);
        execFileSync('qpdf', ['--check', join(dir, 'a.pdf')]);
      }),
      { numRuns: runs(15) },
    );
  });

  it('reads every object as qpdf does, in tables, in object streams with a cross-reference stream, and after an update to those', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(letters, simple), { minLength: 1, maxLength: 4 }),
        // An object that is a bare reference is left out: qpdf reads it as a number and a stray keyword.
        fc.array(
          simple.filter((v) => !(v instanceof PdfRef)),
          { maxLength: 4 },
        ),
        (entries, more) => {
          const objects = new PdfObjects(base);
          const added = [new Map(entries), ...more].map((v, i) => valueObject(objects.size + i, v));
          // The catalog again, naming the new objects: qpdf drops the objects nothing refers to when it rewrites a file.
          const catalog = new Map<string, PdfValue>([
            ['Type', new PdfName('Catalog')],
            ['Pages', new PdfRef(2, 0)],
            ['Added', added.map((o) => new PdfRef(o.num, 0))],
          ]);
          const pdf = appendUpdate(objects, [valueObject(1, catalog), ...added]).pdf;
          assert.equal(assertSameObjects(pdf), 3 + added.length);
          const packed = withObjectStreams(pdf);
          const packedObjects = new PdfObjects(packed);
          assert.ok(packedObjects.lastIsStream);
          assert.ok(assertSameObjects(packed) >= 3 + added.length);
          // An update to the packed file: its section is a stream too, and qpdf reads it whole.
          const updated = appendUpdate(packedObjects, [valueObject(packedObjects.size, new Map(entries))]).pdf;
          writeFileSync(join(dir, 'u.pdf'), updated);
          execFileSync('qpdf', ['--check', join(dir, 'u.pdf')]);
          assertSameObjects(updated);
        },
      ),
      { numRuns: runs(10) },
    );
  });

  it('refuses a startxref that names no cross-reference section', () => {
    const updated = appendUpdate(new PdfObjects(base), [valueObject(3, 1)]).pdf;
    const at = updated.lastIndexOf('startxref\n') + 'startxref\n'.length;
    const damaged = Buffer.concat([updated.subarray(0, at), Buffer.from(`${base.length + 1}\n%%EOF\n`)]);
    assert.throws(() => new PdfObjects(damaged), PdfSyntaxError);
  });
});

describe('the objects of a damaged PDF', () => {
  /** A small PDF whose last section is a cross-reference stream, as qpdf writes one. */
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
  /** The same objects packed by qpdf into object streams. */
  const files = [xrefStream(false), xrefStream(true), withObjectStreams(xrefStream(false))];

  it('reads the undamaged files, plain, compressed and packed', () => {
    for (const whole of files) {
      const update = appendSignatureUpdate(whole, {}, 64, new Date(0));
      assert.ok(update.pdf.subarray(0, whole.length).equals(whole));
      assert.match(update.pdf.toString('latin1', whole.length), /\/Type \/XRef/);
      // The first page again, its link kept and the widget after it.
      assert.match(
        update.pdf.toString('latin1', whole.length),
        /\/Annots \[<< ?\/(Subtype \/Link|Rect \[ ?0 0 1 1 ?\]) \/(Subtype \/Link|Rect \[ ?0 0 1 1 ?\]) ?>> \d+ 0 R\]/,
      );
    }
  });

  it('refuses a cross-reference stream that inflates past the bound', () => {
    // Zeros inflate a thousandfold: 17 MiB of them, from a file of some 17 KiB.
    const bomb = deflateSync(Buffer.alloc(17 * 1024 * 1024));
    const head = Buffer.from(`%PDF-1.5\n1 0 obj\n<</Type /XRef /Size 2 /W [1 2 1] /Filter /FlateDecode /Length ${bomb.length}>>\nstream\n`);
    const one = Buffer.concat([head, bomb, Buffer.from(`\nendstream\nendobj\nstartxref\n9\n%%EOF\n`)]);
    assert.throws(() => new PdfObjects(one), PdfSyntaxError);
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
          const objects = (() => {
            try {
              return new PdfObjects(damaged);
            } catch (error) {
              assert.ok(error instanceof PdfSyntaxError, String(error));
              return undefined;
            }
          })();
          if (!objects) return;
          // Every object the damaged file still places reads as values, or is refused the same way.
          for (let num = 1; num < Math.min(objects.size, 20); num++) {
            try {
              if (objects.has(num)) objects.read(objects.value({ num, gen: 0 }));
            } catch (error) {
              assert.ok(error instanceof PdfSyntaxError, String(error));
            }
          }
          objects.wipe();
        },
      ),
      { numRuns: runs(3000) },
    );
  });
});
