/**
 * `pdf.einvoice`: a Factur-X / ZUGFeRD invoice from one request. The answer
 * is parsed: its XMP (the `fx:` properties and their PDF/A extension schema,
 * with all Typst wrote kept), the one embedded XML and its relationship,
 * `qpdf --check`; the XML's XSD check and the business rules (the
 * project's own rule file, in the form of the official ones) answer 400.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { XmlDocument } from 'libxml2-wasm';
import { loadConfig } from '../src/config.js';
import { pdfAttachment, pdfAttachments, pdfObjects, pdfXmp } from './support/poppler.js';
import { generate, startService, type Service, pdfBytesOf, errorOf } from './support/service.js';

const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/einvoice/${name}`, import.meta.url));
const example = (name: string) => readFileSync(new URL(`../../examples/${name}`, import.meta.url), 'utf8');
const RULES = new URL('../../test/fixtures/einvoice/rules.xslt', import.meta.url).pathname;
const EN16931 = fixture('en16931.xml');
const MINIMUM = fixture('minimum.xml');

const NS = {
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  fx: 'urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#',
  pdfaExtension: 'http://www.aiim.org/pdfa/ns/extension/',
  pdfaSchema: 'http://www.aiim.org/pdfa/ns/schema#',
  pdfaProperty: 'http://www.aiim.org/pdfa/ns/property#',
  pdfaid: 'http://www.aiim.org/pdfa/ns/id/',
  dc: 'http://purl.org/dc/elements/1.1/',
};

let service: Service;
before(async () => {
  service = await startService({ WORKERS: '1', EINVOICE_RULES: RULES });
});
after(async () => {
  await service.stop();
});

/** The XMP packet, parsed, and a reader of one XPath's text. */
function xmpOf(pdf: Uint8Array): { text: (xpath: string) => string[]; dispose: () => void } {
  const doc = XmlDocument.fromString(pdfXmp(pdf).trim());
  return {
    text: (xpath) => doc.find(xpath, NS).map((n) => n.content),
    dispose: () => doc.dispose(),
  };
}

/** `qpdf --check` exits 0 only for a file without errors or warnings. */
function qpdfCheck(pdf: Uint8Array): void {
  const dir = mkdtempSync(join(tmpdir(), 'einvoice-'));
  try {
    writeFileSync(join(dir, 'a.pdf'), pdf);
    execFileSync('qpdf', ['--check', join(dir, 'a.pdf')]);
  } finally {
    rmSync(dir, { recursive: true });
  }
}

/** Each /AFRelationship of the document's reachable objects (qpdf writes only those). */
const relationships = (pdf: Uint8Array) => [...pdfObjects(pdf).matchAll(/\/AFRelationship \/(\w+)/g)].map((m) => m[1]);

const body = (einvoice: object, extra: object = {}) => ({
  data: {},
  template: '#set document(title: "Invoice")\n= Invoice',
  typst: '0.14',
  pdf: { einvoice },
  ...extra,
});

describe('e-invoices (Factur-X / ZUGFeRD)', () => {
  it('finishes the example: XMP fx: properties and their extension schema, one factur-x.xml, Typst XMP kept', async () => {
    const data = JSON.parse(example('einvoice.json')) as object;
    const pdf = await pdfBytesOf(
      await generate(service, { data, template: example('einvoice.typ'), typst: '0.14', pdf: { einvoice: {} } }),
    );
    qpdfCheck(pdf);
    assert.deepEqual(pdfAttachments(pdf), ['factur-x.xml']);
    assert.deepEqual(relationships(pdf), ['Alternative']);
    assert.match(pdfObjects(pdf), /\/Subtype \/text#2fxml/i);
    const xmp = xmpOf(pdf);
    try {
      assert.deepEqual(xmp.text('//fx:DocumentType'), ['INVOICE']);
      assert.deepEqual(xmp.text('//fx:DocumentFileName'), ['factur-x.xml']);
      assert.deepEqual(xmp.text('//fx:Version'), ['1.0']);
      assert.deepEqual(xmp.text('//fx:ConformanceLevel'), ['EN 16931']);
      // Typst's own: the PDF/A identification, the title, its extension schemas.
      assert.deepEqual(xmp.text('//pdfaid:part'), ['3']);
      assert.deepEqual(xmp.text('//pdfaid:conformance'), ['B']);
      assert.deepEqual(xmp.text('//dc:title/rdf:Alt/rdf:li'), ['Invoice RE-2026-0417']);
      assert.equal(xmp.text('//pdfaExtension:schemas').length, 1);
      const schemas = xmp.text('//pdfaExtension:schemas/rdf:Bag/rdf:li/pdfaSchema:namespaceURI');
      assert.ok(schemas.includes('http://ns.adobe.com/xap/1.0/mm/'), 'Typst’s extension schemas are kept');
      const fx = `//pdfaExtension:schemas/rdf:Bag/rdf:li[pdfaSchema:namespaceURI="${NS.fx}"]`;
      assert.deepEqual(xmp.text(`${fx}/pdfaSchema:prefix`), ['fx']);
      const property = (field: string) => xmp.text(`${fx}/pdfaSchema:property/rdf:Seq/rdf:li/pdfaProperty:${field}`);
      assert.deepEqual(property('name').sort(), ['ConformanceLevel', 'DocumentFileName', 'DocumentType', 'Version']);
      assert.deepEqual(property('valueType'), ['Text', 'Text', 'Text', 'Text']);
      assert.deepEqual(property('category'), ['external', 'external', 'external', 'external']);
    } finally {
      xmp.dispose();
    }
  });

  it('keeps every byte Typst wrote: the answer starts with a whole PDF and appends one update', async () => {
    const request = body({ xml: 'invoice.xml' }, { assets: { 'invoice.xml': EN16931.toString('base64') } });
    const pdf = Buffer.from(await pdfBytesOf(await generate(service, request)));
    const sections = [...pdf.toString('latin1').matchAll(/\nstartxref\n/g)].length;
    assert.equal(sections, 2);
    assert.match(pdf.toString('latin1'), /\/Prev \d+/);
    qpdfCheck(pdf);
  });

  it('attaches an XML sent as an asset, MINIMUM with /AFRelationship /Data', async () => {
    const pdf = await pdfBytesOf(await generate(service, body({ xml: 'min.xml' }, { assets: { 'min.xml': MINIMUM.toString('base64') } })));
    qpdfCheck(pdf);
    assert.deepEqual(pdfAttachments(pdf), ['factur-x.xml']);
    assert.deepEqual(relationships(pdf), ['Data']);
    assert.deepEqual(pdfAttachment(pdf, 'factur-x.xml'), MINIMUM);
    const xmp = xmpOf(pdf);
    try {
      assert.deepEqual(xmp.text('//fx:ConformanceLevel'), ['MINIMUM']);
    } finally {
      xmp.dispose();
    }
  });

  it('replaces the template’s attachment of the XML, keeping its other attachments', async () => {
    const template =
      '#pdf.attach("factur-x.xml", read("factur-x.xml", encoding: none), relationship: "source", mime-type: "application/xml", description: "data")\n' +
      '#pdf.attach("notes.txt", bytes("notes"), relationship: "supplement", mime-type: "text/plain", description: "notes")\n= Invoice';
    const assets = { 'factur-x.xml': EN16931.toString('base64') };
    const pdf = await pdfBytesOf(
      await generate(service, { data: {}, template, typst: '0.14', assets, pdf: { einvoice: { profile: 'EN 16931' } } }),
    );
    qpdfCheck(pdf);
    assert.deepEqual(pdfAttachments(pdf).sort(), ['factur-x.xml', 'notes.txt']);
    assert.deepEqual(relationships(pdf).sort(), ['Alternative', 'Supplement']);
  });

  it('finds the XML the template attached under a path by that path, and holds it once', async () => {
    const attach = (content: string) =>
      `#pdf.attach("a/b/inv.xml", ${content}, relationship: "data", mime-type: "text/xml", description: "invoice")\n= Invoice`;
    const assets = { 'a/b/inv.xml': EN16931.toString('base64') };
    // The template's attachment is the XML (not the asset again beside it), renamed to its Factur-X name.
    const pdf = await pdfBytesOf(
      await generate(service, body({ xml: 'a/b/inv.xml' }, { template: attach('read("a/b/inv.xml", encoding: none)'), assets })),
    );
    qpdfCheck(pdf);
    assert.deepEqual(pdfAttachments(pdf), ['factur-x.xml']);
    assert.deepEqual(pdfAttachment(pdf, 'factur-x.xml'), EN16931);
    // So what the template attached under that path is what is checked, whatever the asset of the same name holds.
    const res = await generate(service, body({ xml: 'a/b/inv.xml' }, { template: attach('bytes("<not-an-invoice/>")'), assets }));
    assert.match(await errorOf(res), /^The e-invoice XML "a\/b\/inv\.xml" declares no Factur-X profile/);
    // Without a template's attachment under the path, the asset is attached, once.
    const fromAsset = await pdfBytesOf(await generate(service, body({ xml: 'a/b/inv.xml' }, { assets })));
    assert.deepEqual(pdfAttachments(fromAsset), ['factur-x.xml']);
  });

  it('refuses a template that attaches another file under the name the XML must have, rather than drop it', async () => {
    const other = (name: string) =>
      `#pdf.attach("${name}", bytes("not the invoice"), relationship: "supplement", mime-type: "text/plain", description: "other")\n= Invoice`;
    const assets = { 'inv.xml': EN16931.toString('base64') };
    // Directly, and under a path the attachment's plain name makes the same.
    for (const name of ['factur-x.xml', 'a/factur-x.xml']) {
      const res = await generate(service, body({ xml: 'inv.xml' }, { template: other(name), assets }));
      assert.equal(res.status, 400);
      assert.equal(
        await errorOf(res),
        'The e-invoice XML "inv.xml" must be the only file named "factur-x.xml" in the PDF, and the template attaches another file under that name',
      );
    }
    // XRECHNUNG's name is xrechnung.xml: a file of the template's named factur-x.xml then stays.
    const xrechnungXml = EN16931.toString('utf8').replace(
      '<ram:ID>urn:cen.eu:en16931:2017</ram:ID>',
      '<ram:ID>urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0</ram:ID>',
    );
    const xrechnung = await generate(
      service,
      body({ xml: 'inv.xml' }, { template: other('factur-x.xml'), assets: { 'inv.xml': Buffer.from(xrechnungXml).toString('base64') } }),
    );
    assert.deepEqual(pdfAttachments(await pdfBytesOf(xrechnung)).sort(), ['factur-x.xml', 'xrechnung.xml']);
  });

  it('gives each profile its /AFRelationship, file name and conformance level', async () => {
    const declaring = (id: string, xml = EN16931.toString('utf8')) =>
      xml.replace('<ram:ID>urn:cen.eu:en16931:2017</ram:ID>', `<ram:ID>${id}</ram:ID>`);
    const withoutLines = (xml: string) =>
      xml.replace(/<ram:IncludedSupplyChainTradeLineItem>.*?<\/ram:IncludedSupplyChainTradeLineItem>\n?/gs, '');
    const cases = [
      { profile: 'MINIMUM', xml: MINIMUM.toString('utf8'), relationship: 'Data', file: 'factur-x.xml' },
      { profile: 'BASIC WL', xml: withoutLines(declaring('urn:factur-x.eu:1p0:basicwl')), relationship: 'Data', file: 'factur-x.xml' },
      {
        profile: 'BASIC',
        xml: declaring('urn:cen.eu:en16931:2017#compliant#urn:factur-x.eu:1p0:basic'),
        relationship: 'Alternative',
        file: 'factur-x.xml',
      },
      { profile: 'EN 16931', xml: EN16931.toString('utf8'), relationship: 'Alternative', file: 'factur-x.xml' },
      {
        profile: 'EXTENDED',
        xml: declaring('urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended'),
        relationship: 'Alternative',
        file: 'factur-x.xml',
      },
      {
        profile: 'XRECHNUNG',
        xml: declaring('urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0'),
        relationship: 'Alternative',
        file: 'xrechnung.xml',
      },
    ];
    for (const { profile, xml, relationship, file } of cases) {
      const pdf = await pdfBytesOf(
        await generate(service, body({ xml: 'in.xml' }, { assets: { 'in.xml': Buffer.from(xml).toString('base64') } })),
      );
      assert.deepEqual(pdfAttachments(pdf), [file], profile);
      assert.deepEqual(relationships(pdf), [relationship], profile);
      const xmp = xmpOf(pdf);
      try {
        assert.deepEqual(xmp.text('//fx:ConformanceLevel'), [profile]);
        assert.deepEqual(xmp.text('//fx:DocumentFileName'), [file]);
      } finally {
        xmp.dispose();
      }
    }
  });

  it('leaves a PDF that asked for no e-invoice as Typst wrote it: one cross-reference section', async () => {
    const res = await generate(service, {
      data: {},
      template: '#set document(title: "Plain")\n= Plain',
      typst: '0.14',
      pdf: { standard: 'a-3b' },
    });
    const pdf = Buffer.from(await pdfBytesOf(res));
    assert.equal([...pdf.toString('latin1').matchAll(/\nstartxref\n/g)].length, 1);
    assert.doesNotMatch(pdfXmp(pdf), /factur-x/);
  });

  it('refuses an XML the XSD refuses: 400 with the file, line and schema message', async () => {
    const bad = Buffer.from(
      EN16931.toString('utf8').replace('<ram:TypeCode>380</ram:TypeCode>', '<ram:TypeCode>380</ram:TypeCode><ram:Bogus/>'),
    );
    const message = await errorOf(await generate(service, body({ xml: 'bad.xml' }, { assets: { 'bad.xml': bad.toString('base64') } })));
    assert.match(
      message,
      /^The e-invoice XML "bad\.xml" is not valid against the Factur-X 1\.07\.3 XSD of profile EN 16931, line 4: Element .*Bogus.*not expected/,
    );
  });

  it('refuses XML that is not well-formed, a missing XML, and a profile the XML does not declare', async () => {
    const broken = Buffer.from('<a>\n<b></a>').toString('base64');
    assert.match(
      await errorOf(await generate(service, body({ xml: 'b.xml' }, { assets: { 'b.xml': broken } }))),
      /^The e-invoice XML "b\.xml" is not well-formed XML, line 2: /,
    );
    assert.equal(
      await errorOf(await generate(service, body({}))),
      'The e-invoice XML "factur-x.xml" is neither attached by the template (pdf.attach) nor sent as an asset',
    );
    const mismatch = body({ xml: 'min.xml', profile: 'EN 16931' }, { assets: { 'min.xml': MINIMUM.toString('base64') } });
    assert.equal(
      await errorOf(await generate(service, mismatch)),
      'Field "pdf.einvoice.profile" is "EN 16931" but the e-invoice XML "min.xml" declares "MINIMUM"',
    );
  });

  it('refuses an XML with a DOCTYPE before parsing it: no entity of it is read', async () => {
    const xxe = `<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n${EN16931.toString('utf8')
      .replace(/^<\?xml[^>]*>\n/, '')
      .replace('RE-2026-0417', '&e;')}`;
    const message = await errorOf(await generate(service, body({}, { assets: { 'factur-x.xml': Buffer.from(xxe).toString('base64') } })));
    assert.equal(message, 'The e-invoice XML "factur-x.xml" has a DOCTYPE declaration on line 2: an e-invoice may not have one');
  });

  it('refuses an XML that is not UTF-8, so that a DOCTYPE in UTF-16 is not read either, and the worker lives', async () => {
    const utf16 = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const invoice = EN16931.toString('utf8').replace(/^<\?xml[^>]*>\n/, '');
    const xxe = `<?xml version="1.0" encoding="UTF-16"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n${invoice.replace('RE-2026-0417', '&e;')}`;
    const workers = service.workerPids();
    const notUtf8 = ' must be UTF-8, and it is UTF-16 or UTF-32, or its XML declaration names another encoding';
    for (const [name, xml] of [
      ['a UTF-16 XML with an external entity', utf16(xxe)],
      ['a UTF-16 XML without a DOCTYPE', utf16(`<?xml version="1.0" encoding="UTF-16"?>\n${invoice}`)],
      ['a UTF-16 XML without its byte order mark', Buffer.from(`<?xml version="1.0" encoding="UTF-16"?>\n${invoice}`, 'utf16le')],
      ['a UTF-8 XML that declares Latin-1', Buffer.from(`<?xml version="1.0" encoding='ISO-8859-1'?>\n${invoice}`)],
    ] as const) {
      const res = await generate(service, body({}, { assets: { 'factur-x.xml': xml.toString('base64') } }));
      assert.equal(res.status, 400, name);
      assert.equal(await errorOf(res), `The e-invoice XML "factur-x.xml"${notUtf8}`, name);
    }
    // A UTF-8 XML that says so, with its byte order mark, is checked as before.
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`<?xml version="1.0" encoding="utf-8"?>\n${invoice}`)]);
    const res = await generate(service, body({}, { assets: { 'factur-x.xml': bom.toString('base64') } }));
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(service.workerPids(), workers, 'no worker was replaced');
  });

  it('refuses an XML that declares a profile this service does not know, whether or not the request names one', async () => {
    const unknown = Buffer.from(EN16931.toString('utf8').replace('urn:cen.eu:en16931:2017', 'urn:example:unknown')).toString('base64');
    const expected =
      'The e-invoice XML "factur-x.xml" declares a GuidelineSpecifiedDocumentContextParameter/ID that is none of the Factur-X profiles MINIMUM, BASIC WL, BASIC, EN 16931, EXTENDED, XRECHNUNG';
    for (const einvoice of [{}, { profile: 'EN 16931' }]) {
      const res = await generate(service, body(einvoice, { assets: { 'factur-x.xml': unknown } }));
      assert.equal(res.status, 400);
      assert.equal(await errorOf(res), expected);
    }
  });

  it('runs the business rules: a failed assert is a 400 with its id and text, a warning goes to X-Einvoice-Warnings', async () => {
    const wrongTotal = Buffer.from(EN16931.toString('utf8').replace(/<ram:GrandTotalAmount>[^<]*/, '<ram:GrandTotalAmount>1.00'));
    const message = await errorOf(await generate(service, body({}, { assets: { 'factur-x.xml': wrongTotal.toString('base64') } })));
    assert.match(
      message,
      /^The e-invoice XML "factur-x\.xml" breaks 1 business rule: TEST-CO-15: \[TEST-CO-15\] Invoice total amount with VAT/,
    );
    const noReference = Buffer.from(EN16931.toString('utf8').replace(/<ram:BuyerReference>[^<]*<\/ram:BuyerReference>/, ''));
    const res = await generate(service, body({}, { assets: { 'factur-x.xml': noReference.toString('base64') } }));
    await pdfBytesOf(res);
    assert.equal(res.headers.get('x-einvoice-warnings'), 'TEST-W-01: [TEST-W-01] A buyer reference should be given.');
  });

  it("stops the start when a business-rule stylesheet does not compile, with SaxonJS's message", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'einvoice-rules-'));
    try {
      const broken = join(dir, 'broken.xslt');
      writeFileSync(
        broken,
        '<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"><xsl:template match="/"><xsl:no-such-instruction/></xsl:template></xsl:stylesheet>',
      );
      await assert.rejects(
        startService({ EINVOICE_RULES: broken, WORKERS: '1' }),
        /E-invoice business rules failed to load: .*no-such-instruction/,
      );
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('reads EINVOICE_RULES: bare paths for the EN 16931 profiles, PROFILE=path for one, a missing file or unknown profile stops the start', () => {
    assert.deepEqual(loadConfig({ EINVOICE_RULES: `${RULES}, XRECHNUNG=${RULES}` }).einvoiceRules, [
      { path: RULES, profiles: ['BASIC', 'EN 16931', 'XRECHNUNG'] },
      { path: RULES, profiles: ['XRECHNUNG'] },
    ]);
    assert.throws(
      () => loadConfig({ EINVOICE_RULES: '/nowhere/rules.xslt' }),
      /EINVOICE_RULES must name absolute paths of XSLT files, got "\/nowhere\/rules.xslt"/,
    );
    assert.throws(() => loadConfig({ EINVOICE_RULES: `GOLD=${RULES}` }), /EINVOICE_RULES: "GOLD" is not a profile/);
  });

  it('checks the field with the body: profile, xml, standard, and the engine', async () => {
    assert.match(
      await errorOf(await generate(service, body({ profile: 'GOLD' }))),
      /^Field "pdf.einvoice.profile" must be one of "MINIMUM", "BASIC WL"/,
    );
    assert.match(
      await errorOf(await generate(service, body({ xml: '../x.xml' }))),
      /^Field "pdf.einvoice.xml" must be an asset or attachment name/,
    );
    for (const xml of [5, true, null]) {
      assert.equal(
        await errorOf(await generate(service, body({ xml }))),
        'Field "pdf.einvoice.xml" must be a string: the name of an asset, or of a file the template attaches',
      );
    }
    assert.equal(await errorOf(await generate(service, body({ pdf: 1 }))), 'Field "pdf.einvoice" may hold only "xml" and "profile"');
    assert.equal(
      await errorOf(await generate(service, body([]))),
      'Field "pdf.einvoice" must be a JSON object with the optional fields "xml" and "profile"',
    );
    const a2b = { data: {}, template: '= x', typst: '0.14', pdf: { standard: 'a-2b', einvoice: {} } };
    assert.match(
      await errorOf(await generate(service, a2b)),
      /^Field "pdf.standard" must be one of "a-3b", "a-3u", "a-3a" with "pdf.einvoice"/,
    );
    const old = { data: {}, template: '= x', typst: '0.11', pdf: { einvoice: {} } };
    assert.match(await errorOf(await generate(service, old)), /^Field "pdf" needs "typst": "0.14"/);
  });
});
