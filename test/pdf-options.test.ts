/**
 * The `pdf` field: Typst 0.14's PDF standards and tagging, declared in the
 * PDF's XMP as Typst's own export writes it; what a standard forbids is a
 * 400 with Typst's message; files attached with `pdf.attach`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pdfAttachment, pdfAttachments, pdfObjects, pdfXmp } from './support/poppler.js';
import { generate, startService, type Service } from './support/service.js';

let service: Service;
before(async () => {
  service = await startService();
});
after(async () => {
  await service.stop();
});

async function pdfBytes(res: Response): Promise<Uint8Array> {
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get('x-typst-version'), '0.14.2');
  return new Uint8Array(await res.arrayBuffer());
}

async function errorOf(res: Response, status = 400): Promise<string> {
  assert.equal(res.status, status);
  return ((await res.json()) as { error: string }).error;
}

/** A document every standard accepts: a title (PDF/UA-1 wants one), a heading, text. */
const PLAIN = '#set document(title: "Quarterly report")\n= Summary\nAll figures are final.';

/** What each standard declares in XMP: PDF/A part and conformance (and revision for part 4), PDF/UA part. */
const DECLARED: Record<string, { header: string; xmp: RegExp[] }> = {
  'a-1b': { header: '%PDF-1.4', xmp: [/<pdfaid:part>1</, /<pdfaid:conformance>B</] },
  'a-1a': { header: '%PDF-1.4', xmp: [/<pdfaid:part>1</, /<pdfaid:conformance>A</] },
  'a-2b': { header: '%PDF-1.7', xmp: [/<pdfaid:part>2</, /<pdfaid:conformance>B</] },
  'a-2u': { header: '%PDF-1.7', xmp: [/<pdfaid:part>2</, /<pdfaid:conformance>U</] },
  'a-2a': { header: '%PDF-1.7', xmp: [/<pdfaid:part>2</, /<pdfaid:conformance>A</] },
  'a-3b': { header: '%PDF-1.7', xmp: [/<pdfaid:part>3</, /<pdfaid:conformance>B</] },
  'a-3u': { header: '%PDF-1.7', xmp: [/<pdfaid:part>3</, /<pdfaid:conformance>U</] },
  'a-3a': { header: '%PDF-1.7', xmp: [/<pdfaid:part>3</, /<pdfaid:conformance>A</] },
  'a-4': { header: '%PDF-2.0', xmp: [/<pdfaid:part>4</, /<pdfaid:rev>2020</] },
  'a-4f': { header: '%PDF-2.0', xmp: [/<pdfaid:part>4</, /<pdfaid:conformance>F</] },
  'a-4e': { header: '%PDF-2.0', xmp: [/<pdfaid:part>4</, /<pdfaid:conformance>E</] },
  'ua-1': { header: '%PDF-1.7', xmp: [/<pdfuaid:part>1</] },
};

describe('PDF standards (Typst 0.14)', () => {
  for (const [standard, declared] of Object.entries(DECLARED)) {
    it(`${standard} is declared in the XMP`, async () => {
      const bytes = await pdfBytes(await generate(service, { data: {}, template: PLAIN, typst: '0.14', pdf: { standard } }));
      assert.equal(Buffer.from(bytes.subarray(0, 8)).toString('latin1'), declared.header);
      const xmp = pdfXmp(bytes);
      for (const pattern of declared.xmp) assert.match(xmp, pattern);
      if (standard === 'ua-1') assert.doesNotMatch(xmp, /pdfaid:part/);
      else assert.doesNotMatch(xmp, /pdfuaid:part/);
    });
  }

  it('a PDF version without an archive standard sets the header and declares nothing', async () => {
    for (const standard of ['1.4', '1.5', '1.6', '1.7', '2.0']) {
      const bytes = await pdfBytes(await generate(service, { data: {}, template: PLAIN, typst: '0.14', pdf: { standard } }));
      assert.equal(Buffer.from(bytes.subarray(0, 8)).toString('latin1'), `%PDF-${standard}`);
      assert.doesNotMatch(pdfXmp(bytes), /pdfa?u?id:part/);
    }
  });

  it('tags the PDF by default, and not with "tagged": false', async () => {
    const tagged = await pdfBytes(await generate(service, { data: {}, template: PLAIN, typst: '0.14' }));
    assert.match(pdfObjects(tagged), /\/StructTreeRoot/);
    const explicit = await pdfBytes(await generate(service, { data: {}, template: PLAIN, typst: '0.14', pdf: { tagged: true } }));
    assert.match(pdfObjects(explicit), /\/StructTreeRoot/);
    const untagged = await pdfBytes(await generate(service, { data: {}, template: PLAIN, typst: '0.14', pdf: { tagged: false } }));
    assert.doesNotMatch(pdfObjects(untagged), /\/StructTreeRoot/);
  });
});

describe("what a standard forbids: 400 with Typst's message", () => {
  it('transparency under PDF/A-1b', async () => {
    const template = 'Seal:\n#rect(fill: rgb(0, 0, 0, 50%))';
    const error = await errorOf(await generate(service, { data: {}, template, typst: '0.14', pdf: { standard: 'a-1b' } }));
    assert.equal(
      error,
      "Typst error: PDF/A-1b error: the used fill or stroke has transparency; hint: try exporting with a different standard that supports transparency; hint: or don't use colors with transparency in this export mode",
    );
    // Allowed under PDF/A-2b.
    await pdfBytes(await generate(service, { data: {}, template, typst: '0.14', pdf: { standard: 'a-2b' } }));
  });

  it('a missing title under PDF/UA-1', async () => {
    const error = await errorOf(await generate(service, { data: {}, template: 'No title', typst: '0.14', pdf: { standard: 'ua-1' } }));
    assert.equal(error, 'Typst error: PDF/UA-1 error: missing document title; hint: set the title with `set document(title: [...])`');
  });

  it('an attached file under PDF/A-2b', async () => {
    const template = '#pdf.attach("data.xml", bytes("<a/>"), mime-type: "application/xml", description: "Data")\nText';
    const error = await errorOf(await generate(service, { data: {}, template, typst: '0.14', pdf: { standard: 'a-2b' } }));
    assert.equal(
      error,
      'Typst error: PDF/A-2b error: document contains an attached file; hint: file attachments are not supported in this export mode',
    );
  });
});

describe('attachments', () => {
  it('a PDF/A-3b document carries its XML, listed by pdfdetach', async () => {
    const xml = '<?xml version="1.0" encoding="UTF-8"?>\n<invoice number="7"/>\n';
    const template = [
      '#set document(title: "Invoice 7")',
      '#pdf.attach("factur-x.xml", read("invoice.xml", encoding: none), relationship: "alternative", mime-type: "application/xml", description: "Invoice data")',
      '= Invoice 7',
    ].join('\n');
    const res = await generate(service, {
      data: {},
      template,
      assets: { 'invoice.xml': Buffer.from(xml).toString('base64') },
      typst: '0.14',
      pdf: { standard: 'a-3b' },
    });
    const bytes = await pdfBytes(res);
    assert.deepEqual(pdfAttachments(bytes), ['factur-x.xml']);
    assert.equal(pdfAttachment(bytes, 'factur-x.xml').toString('utf8'), xml);
    assert.match(pdfObjects(bytes), /\/AFRelationship\s*\/Alternative/);
    assert.match(pdfXmp(bytes), /<pdfaid:part>3</);
  });
});

describe('the pdf field, checked', () => {
  it('needs the 0.14 engine', async () => {
    for (const body of [
      { data: {}, template: 'x', pdf: { standard: 'a-2b' } },
      { data: {}, template: 'x', typst: '0.11', pdf: { tagged: false } },
    ]) {
      const res = await generate(service, body);
      assert.equal(res.headers.get('x-typst-version'), '0.11.1');
      assert.equal(
        await errorOf(res),
        'Field "pdf" needs "typst": "0.14": PDF standards, tagging and e-invoices are options of the Typst 0.14 engine',
      );
    }
  });

  it('is ignored when empty or null', async () => {
    for (const pdf of [{}, null]) {
      const res = await generate(service, { data: {}, template: 'x', pdf });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
  });

  const refused: [string, unknown, string][] = [
    ['an unknown key', { standard: 'a-2b', compress: true }, 'Field "pdf" may hold only "standard", "tagged", "einvoice" and "signature"'],
    ['a string', 'a-2b', 'Field "pdf" must be a JSON object with the optional fields "standard", "tagged", "einvoice" and "signature"'],
    ['an array', ['a-2b'], 'Field "pdf" must be a JSON object with the optional fields "standard", "tagged", "einvoice" and "signature"'],
    [
      'an unknown standard',
      { standard: 'a-5' },
      'Field "pdf.standard" must be one of "1.4", "1.5", "1.6", "1.7", "2.0", "a-1b", "a-1a", "a-2b", "a-2u", "a-2a", "a-3b", "a-3u", "a-3a", "a-4", "a-4f", "a-4e", "ua-1"',
    ],
    ['a standard in capitals', { standard: 'A-2B' }, 'Field "pdf.standard" must be one of'],
    ['a list of standards', { standard: ['a-2b'] }, 'Field "pdf.standard" must be one of'],
    ['tagged as a string', { tagged: 'yes' }, 'Field "pdf.tagged" must be true or false'],
    ['tagged as null', { tagged: null }, 'Field "pdf.tagged" must be true or false'],
  ];
  for (const [name, pdf, message] of refused) {
    it(`refuses ${name}`, async () => {
      const error = await errorOf(await generate(service, { data: {}, template: 'x', typst: '0.14', pdf }));
      assert.ok(error.startsWith(message), error);
    });
  }
});
