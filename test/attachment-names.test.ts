/**
 * Attachment names: a file a template attaches is embedded under its plain
 * file name, so a reader's "save all" cannot write outside its folder. The
 * renaming of one name is held to a plain oracle over strings (fast-check),
 * and the service's PDFs are read back with poppler and qpdf.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { plainName } from '../src/finish/attachments.js';
import { pdfAttachment, pdfAttachments, pdfXmp } from './support/poppler.js';
import { generate, startService, type Service } from './support/service.js';

/** Unicode's bidirectional controls, which a name shown in a reader must not have (`a<RLO>txt.exe` shows as `aexe.txt`). */
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * The oracle: the last segment after `/` or `\` less its bidirectional controls, or "attachment" when that is
 * empty, `.` or `..`; undefined when there is no separator and the name is fine.
 */
function oracle(name: string): string | undefined {
  const last = name.split(/[/\\]/).at(-1)!.replace(BIDI_CONTROLS, '');
  const bad = last === '' || last === '.' || last === '..';
  if (!bad && last === name) return undefined;
  return bad ? 'attachment' : last;
}

const utf16 = (text: string) => Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()]);
const fromUtf16 = (bytes: Buffer) => Buffer.from(bytes.subarray(2)).swap16().toString('utf16le');

describe('a plain file name', () => {
  const segment = fc.oneof(
    fc.constantFrom('', '.', '..', 'a', 'x.txt', 'Rechnung Müller.xml', '日本.xml', 'a\u202etxt.exe', '\u2067.\u2069.', '\u200f'),
    fc.string({ maxLength: 6 }),
    fc.stringMatching(/^[a.\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]{0,4}$/),
  );
  const path = fc
    .array(segment, { minLength: 1, maxLength: 5 })
    .chain((parts) =>
      fc
        .array(fc.constantFrom('/', '\\'), { minLength: parts.length - 1, maxLength: parts.length - 1 })
        .map((seps) => parts.reduce((all, part, i) => all + (i > 0 ? seps[i - 1] : '') + part, '')),
    );

  it("is the oracle's, for one-byte names", () => {
    fc.assert(
      fc.property(
        path.filter((p) => /^[\x20-\x7e]*$/.test(p)),
        (name) => {
          assert.equal(plainName(Buffer.from(name, 'latin1'))?.toString('latin1'), oracle(name));
        },
      ),
      { numRuns: 3000 },
    );
  });

  it("is the oracle's, for UTF-8 names in a one-byte string (as Typst writes them)", () => {
    fc.assert(
      fc.property(path, (name) => {
        assert.equal(plainName(Buffer.from(name, 'utf8'))?.toString('utf8'), oracle(name));
      }),
      { numRuns: 3000 },
    );
  });

  it("is the oracle's, for UTF-16 names (separators only at whole code units)", () => {
    fc.assert(
      fc.property(path, (name) => {
        const plain = plainName(utf16(name));
        assert.equal(plain === undefined ? undefined : fromUtf16(plain), oracle(name));
      }),
      { numRuns: 3000 },
    );
  });

  it('reads a UTF-16 name cut inside a unit (odd length) without throwing', () => {
    for (const name of ['a/\u202eb', '\u202ex', 'a/\u2067b']) {
      const cut = utf16(name).subarray(0, -1);
      assert.doesNotThrow(() => plainName(cut), name);
    }
  });

  it('never splits a UTF-16 character whose bytes hold a separator byte', () => {
    // U+2F2F and U+5C00: each byte is "/" or "\" in ASCII, but neither unit is a separator.
    assert.equal(plainName(utf16('\u2f2f\u5c00.xml')), undefined);
  });
});

describe('attachments in a PDF from the service', () => {
  let service: Service;
  before(async () => {
    service = await startService();
  });
  after(async () => {
    await service.stop();
  });

  it('are embedded under their plain names; save-all writes inside its folder; the file stays whole and PDF/A-3', async () => {
    const res = await generate(service, {
      data: {},
      typst: '0.14',
      pdf: { standard: 'a-3b' },
      template: [
        '#set document(title: "Attachments")',
        '#pdf.attach("../../evil/../x.txt", bytes("outside"), relationship: "supplement", mime-type: "text/plain", description: "A file")',
        '#pdf.attach("nested/dir/y.txt", bytes("nested"), relationship: "supplement", mime-type: "text/plain", description: "A file")',
        '#pdf.attach("plain.txt", bytes("plain"), relationship: "supplement", mime-type: "text/plain", description: "A file")',
        // Shown as "reportexe.txt" with its right-to-left override: embedded as what it is.
        '#pdf.attach("report\\u{202E}txt.exe", bytes("program"), relationship: "supplement", mime-type: "text/plain", description: "A file")',
        'Attachments',
      ].join('\n'),
    });
    assert.equal(res.status, 200);
    const pdf = Buffer.from(await res.arrayBuffer());
    assert.deepEqual(pdfAttachments(pdf).sort(), ['plain.txt', 'reporttxt.exe', 'x.txt', 'y.txt']);
    assert.equal(pdfAttachment(pdf, 'x.txt').toString(), 'outside');
    assert.match(pdfXmp(pdf), /<pdfaid:part>3<\/pdfaid:part>/);
    const dir = mkdtempSync(join(tmpdir(), 'detach-'));
    try {
      const file = join(dir, 'document.pdf');
      writeFileSync(file, pdf);
      const out = join(dir, 'out');
      execFileSync('mkdir', [out]);
      execFileSync('pdfdetach', ['-saveall', '-o', out, file]);
      assert.deepEqual(readdirSync(out).sort(), ['plain.txt', 'reporttxt.exe', 'x.txt', 'y.txt']);
      assert.deepEqual(readdirSync(dir).sort(), ['document.pdf', 'out'], 'nothing written beside the folder');
      execFileSync('qpdf', ['--check', file]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('two paths with the same file name keep both files', async () => {
    const res = await generate(service, {
      data: {},
      typst: '0.14',
      template: '#pdf.attach("a/same.txt", bytes("one"))\n#pdf.attach("b/same.txt", bytes("two"))\nTwo',
    });
    assert.equal(res.status, 200);
    const pdf = Buffer.from(await res.arrayBuffer());
    assert.deepEqual(pdfAttachments(pdf).sort(), ['same.txt', 'same.txt-2']);
  });

  it('a PDF whose attachments are plain is left as Typst wrote it (one cross-reference section)', async () => {
    const res = await generate(service, { data: {}, typst: '0.14', template: '#pdf.attach("plain.txt", bytes("p"))\nPlain' });
    const pdf = Buffer.from(await res.arrayBuffer()).toString('latin1');
    assert.equal(pdf.match(/startxref/g)?.length, 1);
  });
});
