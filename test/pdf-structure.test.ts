/**
 * The PDF structure reading of src/finish/ against oracles: any value the
 * writer writes reads back equal (fast-check), two updates appended to a
 * PDF read back object by object and pass `qpdf --check`, qpdf's own
 * reading (its JSON) of an appended object is the value written, and
 * arbitrary bytes are refused with a PdfSyntaxError only, in linear time.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { appendUpdate } from '../src/finish/incremental-update.js';
import { readObject, readStructure } from '../src/finish/pdf-structure.js';
import { PdfName, PdfRef, PdfString, PdfSyntaxError, type PdfValue, readValue, writeValue } from '../src/finish/pdf-syntax.js';

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

/** A value as plain data, to compare what was written with what was read. */
function plain(v: PdfValue): unknown {
  if (v instanceof PdfName) return { name: v.name };
  if (v instanceof PdfString) return { string: v.bytes.toString('hex') };
  if (v instanceof PdfRef) return { ref: [v.num, v.gen] };
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]));
  return v;
}

/** Literal strings as other writers write them: the oracle is the byte string itself. */
const literal = (b: Buffer) => `(${[...b].map((x) => `\\${x.toString(8).padStart(3, '0')}`).join('')})`;

describe('PDF object syntax', () => {
  it('reads back every value it writes', () => {
    fc.assert(
      fc.property(value, (v) => {
        const written = writeValue(v);
        const { value: read, end } = readValue(written, 0);
        assert.deepEqual(plain(read), plain(v));
        assert.equal(end, written.length);
      }),
      { numRuns: 500 },
    );
  });

  it('reads literal strings with octal escapes, nested parentheses and line continuations', () => {
    fc.assert(
      fc.property(bytes, (b) => {
        assert.deepEqual((readValue(Buffer.from(literal(b)), 0).value as PdfString).bytes, b);
      }),
    );
    assert.deepEqual((readValue(Buffer.from('(a(b)c\\\n\\)\\n)'), 0).value as PdfString).bytes, Buffer.from('a(b)c)\n'));
  });

  it('refuses any bytes it cannot read with a PdfSyntaxError, never another error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (b) => {
        try {
          readValue(Buffer.from(b), 0);
        } catch (error) {
          assert.ok(error instanceof PdfSyntaxError, String(error));
        }
        try {
          readStructure(Buffer.from(b));
        } catch (error) {
          assert.ok(error instanceof PdfSyntaxError, String(error));
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('stays linear on deep nesting and long unterminated strings', () => {
    assert.throws(() => readValue(Buffer.from('['.repeat(100_000)), 0), PdfSyntaxError);
    assert.throws(() => readValue(Buffer.from(`(${'('.repeat(200_000)}`), 0), PdfSyntaxError);
  });
});

describe('PDF structure and incremental updates', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pdf-structure-'));
  const base = (() => {
    // A small PDF with a classic cross-reference table, as Typst writes them.
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

  it('reads back what an update (and an update after it) wrote, and qpdf finds no error', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(value, fc.option(bytes, { nil: undefined })), { minLength: 1, maxLength: 4 }), (items) => {
        const first = readStructure(base);
        const once = appendUpdate(base, first, [
          {
            num: 1,
            value: new Map<string, PdfValue>([
              ['Type', new PdfName('Catalog')],
              ['Pages', new PdfRef(2, 0)],
            ]),
          },
        ]);
        const structure = readStructure(once);
        // appendUpdate wipes the streams it was given: each gets a copy, the original is the oracle.
        const objects = items.map(([v, stream], i) => ({
          num: structure.size + i,
          value: stream ? new Map([['X', v]]) : [v],
          stream,
          copy: stream && Buffer.from(stream),
        }));
        const twice = appendUpdate(
          once,
          structure,
          objects.map((o) => ({ num: o.num, value: o.value, stream: o.copy })),
        );
        const after = readStructure(twice);
        assert.equal(after.size, structure.size + items.length);
        for (const object of objects) {
          const read = readObject(twice, after, object.num)!;
          assert.deepEqual(
            plain(read.value instanceof Map ? new Map([...read.value].filter(([k]) => k !== 'Length')) : read.value),
            plain(object.value),
          );
          if (object.stream) assert.deepEqual(Buffer.from(read.stream!), object.stream);
        }
        writeFileSync(join(dir, 'a.pdf'), twice);
        execFileSync('qpdf', ['--check', join(dir, 'a.pdf')], { stdio: 'ignore' });
      }),
      { numRuns: 15 },
    );
  });

  it('writes objects that qpdf, another PDF parser, reads as the same values', () => {
    // Strings of letters and names of letters: qpdf shows them as `u:text` and `/Name`, so the two readings compare as they are.
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
    const asQpdf = (v: PdfValue): unknown => {
      if (v instanceof PdfName) return `/${v.name}`;
      if (v instanceof PdfString) return `u:${v.bytes.toString('latin1')}`;
      if (v instanceof PdfRef) return `${v.num} ${v.gen} R`;
      if (Array.isArray(v)) return v.map(asQpdf);
      // A dictionary entry whose value is null is no entry (ISO 32000-1, 7.3.7).
      if (v instanceof Map) return Object.fromEntries([...v].filter(([, x]) => x !== null).map(([k, x]) => [`/${k}`, asQpdf(x)]));
      return v;
    };
    fc.assert(
      fc.property(fc.array(fc.tuple(letters, simple), { minLength: 1, maxLength: 4 }), (entries) => {
        const structure = readStructure(base);
        const value = new Map(entries);
        const pdf = appendUpdate(base, structure, [{ num: structure.size, value }]);
        writeFileSync(join(dir, 'q.pdf'), pdf);
        const json = JSON.parse(
          execFileSync('qpdf', ['--json=2', '--json-key=qpdf', `--json-object=${structure.size}`, join(dir, 'q.pdf')], {
            encoding: 'utf8',
          }),
        ) as { qpdf: [unknown, Record<string, { value: unknown }>] };
        assert.deepEqual(json.qpdf[1][`obj:${structure.size} 0 R`]!.value, asQpdf(value));
      }),
      { numRuns: 15 },
    );
  });

  it('refuses a startxref that names no cross-reference section', () => {
    const structure = readStructure(base);
    const updated = appendUpdate(base, { ...structure, startxref: base.length + 1 }, [{ num: 3, value: 1 }]);
    assert.throws(() => readStructure(updated), PdfSyntaxError);
    rmSync(dir, { recursive: true });
  });
});
