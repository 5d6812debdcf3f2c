/**
 * Golden tests of the reference templates in examples/: rendered by the real
 * service with their sample data and with generated data of other sizes, and
 * checked by parsing the PDFs (pages, header and footer text, the repeated
 * table header, address lines, paragraph breaks, fonts, literal markup).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parsePdf, type ParsedPdf } from './support/pdf.js';
import { pdfLayout, type PdfLine } from './support/pdf-lines.js';
import { pdfAttachment, pdfAttachments, pdfObjects, pdfText, pdfXmp } from './support/poppler.js';
import { MARKUP_SAMPLE, letterData, reportData } from './support/example-data.js';
import { generate, startService, type Service } from './support/service.js';

const example = (file: string) => readFileSync(new URL(`../../examples/${file}`, import.meta.url), 'utf8');
const REPORT = example('report.typ');
const LETTER = example('letter.typ');
const REPORT_SAMPLE = JSON.parse(example('report.json')) as ReturnType<typeof reportData>;
const LETTER_SAMPLE = JSON.parse(example('letter.json')) as ReturnType<typeof letterData> & { logo: string };
const LETTERHEAD = readFileSync(new URL('../../examples/letterhead.svg', import.meta.url)).toString('base64');
const INVOICE = example('invoice-ja.typ');
const INVOICE_SAMPLE = JSON.parse(example('invoice-ja.json')) as {
  customer: { name: string; contact: string };
  items: { description: string; quantity: number; price: number }[];
};

let service: Service;
before(async () => {
  service = await startService({ WORKERS: '2' });
});
after(async () => {
  await service?.stop();
});

async function render(template: string, data: unknown): Promise<{ pdf: ParsedPdf; bytes: Uint8Array }> {
  // The letter's logo, when its data names it, travels as an asset, as `npm run examples` sends it.
  const assets = (data as { logo?: string }).logo === 'letterhead.svg' ? { 'letterhead.svg': LETTERHEAD } : undefined;
  const res = await generate(service, { data, template, assets });
  const bytes = new Uint8Array(await res.arrayBuffer());
  assert.equal(res.status, 200, Buffer.from(bytes).toString());
  return { pdf: await parsePdf(bytes), bytes };
}

function assertPageFooters(pdf: ParsedPdf) {
  for (let page = 1; page <= pdf.pages; page++) {
    assert.equal(pdf.items[page - 1]!.at(-1), `Page ${page} of ${pdf.pages}`, `footer of page ${page}`);
  }
}

describe('report template', () => {
  it('renders the sample data on one A4 page in Arimo (Helvetica), with header, footer and every metric', async () => {
    const { pdf, bytes } = await render(REPORT, REPORT_SAMPLE);
    assert.equal(pdf.pages, 1);
    assert.deepEqual([...pdf.fonts].sort(), ['Arimo-Bold', 'Arimo-Regular']);
    assert.equal(pdf.items[0]![0], REPORT_SAMPLE.report_title, 'header first');
    assertPageFooters(pdf);
    for (const metric of REPORT_SAMPLE.metrics) assert.ok(pdf.items[0]!.includes(metric.name), metric.name);
    const [page] = await pdfLayout(bytes);
    assert.deepEqual([Math.round(page!.width), Math.round(page!.height)], [595, 842], 'A4 in points');
  });

  it('runs 200 metrics over several pages, repeating the table header and numbering "Page X of Y"', async () => {
    const data = reportData(200);
    const { pdf } = await render(REPORT, data);
    assert.equal(pdf.pages, 6);
    assertPageFooters(pdf);
    assert.ok(pdf.text[1]!.includes(`Page 2 of ${pdf.pages}`));
    for (let page = 0; page < pdf.pages; page++) {
      const items = pdf.items[page]!.filter((item) => item.trim() !== '');
      assert.equal(items[0], data.report_title, `header of page ${page + 1}`);
      // The table header row follows the page header (page 1: after the title and summary).
      const at = items.indexOf('Metric');
      assert.ok(at >= 1, `table header on page ${page + 1}`);
      assert.deepEqual(items.slice(at, at + 4), ['Metric', 'Current', 'Previous', 'Change'], `page ${page + 1}`);
      if (page > 0) assert.equal(at, 1, `table header at the top of page ${page + 1}`);
    }
    // Every row is printed exactly once, in order.
    const all = pdf.text.join(' ');
    let from = 0;
    for (const metric of data.metrics) {
      const row = [metric.name, metric.current, metric.previous, metric.change].join('   ');
      const found = all.indexOf(row, from);
      if (!metric.name.startsWith('Share of')) assert.ok(found >= from, `row "${row}" in order`); // that long name wraps
      if (found >= 0) from = found + row.length;
    }
  });

  it('prints characters that are markup in Typst literally', async () => {
    const data = reportData(14);
    data.report_title = `Report for ${MARKUP_SAMPLE}`;
    const { pdf } = await render(REPORT, data);
    assert.equal(pdf.items[0]![0], data.report_title);
    assert.ok(pdf.items[0]!.includes(MARKUP_SAMPLE), 'metric name cell');
    assert.ok(pdf.text[0]!.includes(`(see ${MARKUP_SAMPLE})`), 'summary');
  });
});

/** Lines whose gap to the line above is larger than the usual line spacing of the page. */
function paragraphStarts(lines: PdfLine[]): string[] {
  const gaps = lines.slice(1).map((line, i) => line.top - lines[i]!.top);
  const usual = [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length / 2)]!;
  return lines
    .slice(1)
    .filter((_line, i) => gaps[i]! > usual * 1.3)
    .map((line) => line.text);
}

describe('letter template', () => {
  it('renders the sample letter on one US Letter page in Tinos (Times)', async () => {
    const { pdf, bytes } = await render(LETTER, LETTER_SAMPLE);
    assert.equal(pdf.pages, 1);
    assert.deepEqual([...pdf.fonts].sort(), ['Tinos-Bold', 'Tinos-Regular']);
    const [page] = await pdfLayout(bytes);
    assert.deepEqual([Math.round(page!.width), Math.round(page!.height)], [612, 792], 'US Letter in points');
    const items = pdf.items[0]!;
    assert.equal(items[0], LETTER_SAMPLE.company.name);
    for (const text of [LETTER_SAMPLE.date, LETTER_SAMPLE.salutation, LETTER_SAMPLE.closing]) {
      assert.ok(items.includes(text), text);
    }
    // The signature block ends the letter, one line each.
    assert.deepEqual(items.slice(-3), [LETTER_SAMPLE.sender.name, LETTER_SAMPLE.sender.title, LETTER_SAMPLE.sender.company]);
  });

  it('draws the letterhead logo sent as an asset, and none without one', async () => {
    const withLogo = await render(LETTER, LETTER_SAMPLE);
    assert.equal(withLogo.pdf.forms, 1);
    const withoutLogo = await render(LETTER, { ...LETTER_SAMPLE, logo: undefined });
    assert.equal(withoutLogo.pdf.forms, 0);
    assert.deepEqual(withoutLogo.pdf.items, withLogo.pdf.items);
  });

  it('prints each line of the addresses on a line of its own', async () => {
    const { bytes } = await render(LETTER, LETTER_SAMPLE);
    const lines = (await pdfLayout(bytes))[0]!.lines.map((line) => line.text);
    const recipient = LETTER_SAMPLE.recipient;
    const block = [recipient.name, recipient.title, recipient.company, ...recipient.address.split('\n')];
    const start = lines.indexOf(block[0]!);
    assert.ok(start > 0, 'recipient name on a line of its own');
    assert.deepEqual(lines.slice(start, start + block.length), block);
    for (const line of LETTER_SAMPLE.company.address.split('\n')) assert.ok(lines.includes(line), line);
  });

  it('makes each blank-line-separated part of the body a paragraph of its own', async () => {
    const { bytes } = await render(LETTER, LETTER_SAMPLE);
    const lines = (await pdfLayout(bytes))[0]!.lines;
    const salutation = LETTER_SAMPLE.salutation;
    const body = lines.filter((line) => line.size === lines.find((l) => l.text === salutation)!.size);
    const from = body.findIndex((line) => line.text === salutation);
    const to = body.findIndex((line) => line.text === LETTER_SAMPLE.closing);
    const starts = paragraphStarts(body.slice(from, to));
    const paragraphs = LETTER_SAMPLE.body.split('\n\n');
    assert.equal(paragraphs.length, 4);
    // Each paragraph starts after a gap; no line inside a paragraph does.
    assert.deepEqual(
      starts.map((text) => text.split(' ').slice(0, 4).join(' ')),
      paragraphs.map((text) => text.split(' ').slice(0, 4).join(' ')),
    );
  });

  it('treats a single newline inside a paragraph as a space', async () => {
    const data = letterData({ paragraphs: 2 });
    data.body = data.body.replace('companies. We', 'companies.\nWe');
    const { pdf } = await render(LETTER, data);
    assert.ok(pdf.text[0]!.includes('We appreciated the candid discussion'));
    const { bytes } = await render(LETTER, data);
    const lines = (await pdfLayout(bytes))[0]!.lines;
    assert.ok(!lines.some((line) => line.text.startsWith('We appreciated')), 'no line break before "We appreciated"');
  });

  it('runs a long body to a second page with a continuation header, keeping the signature together', async () => {
    const data = letterData({ paragraphs: 12 });
    const { pdf } = await render(LETTER, data);
    assert.equal(pdf.pages, 2);
    assert.ok(!pdf.text[0]!.includes('Page 1'), 'no continuation header on page 1');
    const items = pdf.items[1]!.filter((item) => item.trim() !== '');
    assert.deepEqual(items.slice(0, 3), [data.recipient.name, data.date, 'Page 2']);
    assert.deepEqual(items.slice(-4), [data.closing, data.sender.name, data.sender.title, data.sender.company]);
  });

  it('prints characters that are markup in Typst literally', async () => {
    const data = letterData();
    data.recipient.company = MARKUP_SAMPLE;
    data.sender.title = MARKUP_SAMPLE;
    const { pdf } = await render(LETTER, data);
    const items = pdf.items[0]!;
    assert.ok(items.includes(MARKUP_SAMPLE), 'recipient company');
    assert.equal(items.at(-2), MARKUP_SAMPLE, 'sender title');
    for (const token of ['Harbor & Finch', '#4471', '$12,500', 'PART_NO_2231*B', 'contracts@harborfinch.example']) {
      assert.ok(pdf.text[0]!.includes(token), token);
    }
  });
});

describe('Japanese invoice template', () => {
  it('prints the customer block and every item in Japanese, in Noto Sans JP, with tax and total', async () => {
    const { pdf } = await render(INVOICE, INVOICE_SAMPLE);
    assert.equal(pdf.pages, 1);
    assert.deepEqual([...pdf.fonts].sort(), ['NotoSans-Bold', 'NotoSans-Regular', 'NotoSansJP-Bold', 'NotoSansJP-Regular']);
    const text = pdf.text[0]!.normalize('NFKC').replace(/\s+/g, '');
    for (const expected of [
      '請求書',
      INVOICE_SAMPLE.customer.name,
      INVOICE_SAMPLE.customer.contact,
      ...INVOICE_SAMPLE.items.map((item) => item.description),
    ]) {
      assert.ok(text.includes(expected.normalize('NFKC').replace(/\s+/g, '')), expected);
    }
    const subtotal = INVOICE_SAMPLE.items.reduce((sum, item) => sum + item.quantity * item.price, 0);
    const total = subtotal + Math.floor(subtotal * 0.1);
    assert.ok(text.includes(`¥${total.toLocaleString('en-US')}`), `total ${total}`);
  });
});

describe('e-invoice template (Typst 0.14, Factur-X EN 16931 on PDF/A-3b)', () => {
  const EINVOICE = example('einvoice.typ');
  const EINVOICE_SAMPLE = JSON.parse(example('einvoice.json')) as { number: string; buyer: { name: string } };
  const row = (
    JSON.parse(readFileSync(new URL('../../playground/examples.json', import.meta.url), 'utf8')) as {
      id: string;
      typst?: string;
      pdf?: unknown;
    }[]
  ).find((r) => r.id === 'einvoice')!;

  it('is offered with the engine, standard and e-invoice profile it needs', () => {
    assert.equal(row.typst, '0.14');
    assert.deepEqual(row.pdf, { standard: 'a-3b', einvoice: { profile: 'EN 16931' } });
  });

  it('renders one A4 page declared PDF/A-3b, with its CII XML attached as factur-x.xml, both with the same totals', async () => {
    const res = await generate(service, { data: EINVOICE_SAMPLE, template: EINVOICE, typst: row.typst, pdf: row.pdf });
    const bytes = new Uint8Array(await res.arrayBuffer());
    assert.equal(res.status, 200, Buffer.from(bytes).toString());
    assert.equal(res.headers.get('x-typst-version'), '0.14.2');
    assert.equal(res.headers.get('x-typst-warnings'), null);
    const pdf = await parsePdf(bytes);
    assert.equal(pdf.pages, 1);
    const [page] = await pdfLayout(bytes);
    assert.deepEqual([Math.round(page!.width), Math.round(page!.height)], [595, 842], 'A4 in points');
    const text = pdfText(bytes);
    for (const expected of [EINVOICE_SAMPLE.number, EINVOICE_SAMPLE.buyer.name, '4,987.60 €', '921.12 €', '9.77 €', '5,918.49 €']) {
      assert.ok(text.includes(expected), expected);
    }
    const xmp = pdfXmp(bytes);
    assert.match(xmp, /<pdfaid:part>3</);
    assert.match(xmp, /<pdfaid:conformance>B</);
    assert.match(xmp, /<fx:ConformanceLevel>EN 16931</);
    assert.deepEqual(pdfAttachments(bytes), ['factur-x.xml']);
    assert.match(pdfObjects(bytes), /\/AFRelationship\s*\/Alternative/);
    const xml = pdfAttachment(bytes, 'factur-x.xml').toString('utf8');
    assertWellFormed(xml);
    assert.match(xml, /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<rsm:CrossIndustryInvoice /);
    assert.match(xml, /<ram:GuidelineSpecifiedDocumentContextParameter><ram:ID>urn:cen\.eu:en16931:2017<\/ram:ID>/);
    assert.match(xml, new RegExp(`<rsm:ExchangedDocument><ram:ID>${EINVOICE_SAMPLE.number}</ram:ID><ram:TypeCode>380</ram:TypeCode>`));
    assert.match(xml, /<ram:LineTotalAmount>4987\.60<\/ram:LineTotalAmount><ram:TaxBasisTotalAmount>4987\.60<\/ram:TaxBasisTotalAmount>/);
    assert.match(
      xml,
      /<ram:TaxTotalAmount currencyID="EUR">930\.89<\/ram:TaxTotalAmount><ram:GrandTotalAmount>5918\.49<\/ram:GrandTotalAmount>/,
    );
    assert.equal(xml.match(/<ram:IncludedSupplyChainTradeLineItem>/g)?.length, 4);
    // The handbook's quotes are escaped in the XML.
    assert.ok(xml.includes('Printed handbook &quot;Data migration in practice&quot;'));
  });

  it('is refused by the 0.11 engine, which has neither pdf.attach nor PDF/A', async () => {
    const res = await generate(service, { data: EINVOICE_SAMPLE, template: EINVOICE, typst: '0.11' });
    assert.equal(res.status, 400);
  });
});

/** Elements nest and close in order, attributes are quoted, and `&` starts an entity: enough to catch a broken template. */
function assertWellFormed(xml: string): void {
  const body = xml.replace(/^<\?xml[^?]*\?>\s*/, '');
  const open: string[] = [];
  for (const match of body.matchAll(
    /<(\/?)([A-Za-z][\w:.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>|&(?!(?:amp|lt|gt|quot|apos);)|<(?![/A-Za-z])/g,
  )) {
    if (match[2] === undefined) assert.fail(`stray markup character at ${match.index}`);
    if (match[4] === '/') continue;
    if (match[1] === '') open.push(match[2]);
    else assert.equal(open.pop(), match[2], `closing tag at ${match.index}`);
  }
  assert.deepEqual(open, [], 'every element is closed');
}
