/**
 * Signed PDFs (`pdf.signature`): a PAdES B-B signature by the operator's
 * identity, on either engine, checked as a reader would with poppler's
 * `pdfsig` and `qpdf --check`; a tampered copy shows as invalid; a signed
 * PDF/A-3b keeps its XMP and attachment. The request's mistakes, a service
 * without an identity, and identities that must stop the start.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MESSAGES, signatureText } from '../src/messages.js';
import { loadSigningIdentity } from '../src/finish/signature-identity.js';
import { PdfSigner } from '../src/finish/signature-signer.js';
import { pdfAttachments, pdfFirstPage, pdfObjects, pdfSignatures, pdfXmp, qpdfCheck } from './support/poppler.js';
import { generate, MAIN, readiness, startService, TEST_KEY, type Service, pdfBytesOf, errorOf } from './support/service.js';
import { makeTestIdentity, SIGNER_NAME, type TestIdentity } from './support/signing-identity.js';

let identity: TestIdentity;
before(() => {
  identity = makeTestIdentity();
});
after(() => identity.dispose());

/** pdfsig's verdict on the only (or last) signature: valid, the whole file covered, by the test signer, as PAdES asks. */
function assertSignedWhole(pdf: Buffer, count = 1): void {
  const signatures = pdfSignatures(pdf);
  assert.equal(signatures.length, count, JSON.stringify(signatures));
  const last = signatures[count - 1]!;
  assert.equal(last['Signature Validation'], 'Signature is Valid.');
  assert.equal(last['Total document signed'], 'yes');
  assert.equal(last['Signer Certificate Common Name'], SIGNER_NAME);
  assert.equal(last['Signing Hash Algorithm'], 'SHA-256');
  assert.equal(last['Signature Type'], 'ETSI.CAdES.detached');
  const check = qpdfCheck(pdf);
  assert.equal(check.status, 0, check.output);
  assert.match(check.output, /No syntax or stream encoding errors/);
}

/** The two byte ranges /ByteRange names, as numbers. */
function byteRange(pdf: Buffer): number[] {
  const match = /\/ByteRange \[([\d ]+)\]/.exec(pdf.toString('latin1', pdf.lastIndexOf('/ByteRange')));
  return match![1]!.trim().split(/ +/).map(Number);
}

/**
 * A body of over 256 KiB whose `data` the server locates from the back, not
 * reads, with a member after `pdf` that holds an array: the walk from the
 * back takes that member for `data`, so the server's own layout misses `pdf`;
 * the worker compiles with the exact layout, and the server must then read
 * `pdf.signature` from that one.
 */
function largeBodyWithSignatureFirst(reason: string): string {
  const data = JSON.stringify({ rows: Array.from({ length: 40_000 }, (_, i) => `row ${i}`) });
  return `{"data":${data},"pdf":{"signature":{"reason":${JSON.stringify(reason)}}},"meta":{"tags":["a"]},"template":"= Large #data.rows.len()"}`;
}

const TEMPLATE = '#set document(title: "Contract")\n= Contract\nSigned by the service, #data.who.';

describe('a service with a signing identity', () => {
  let service: Service;
  before(async () => {
    service = await startService({ WORKERS: '1', ...identity.env });
  });
  after(async () => {
    await service.stop();
  });

  it('says so in /readyz', async () => {
    assert.equal((await readiness(service)).signing, true);
  });

  for (const typst of ['0.11', '0.14']) {
    it(`signs a PDF of Typst ${typst}: valid, the whole file covered, SHA-256, ETSI.CAdES.detached`, async () => {
      const signature = { reason: 'Approved (final)', location: 'Zürich ✓', contact: 'legal@example.com' };
      const pdf = await pdfBytesOf(await generate(service, { data: { who: 'Ada' }, template: TEMPLATE, typst, pdf: { signature } }));
      assertSignedWhole(pdf);
      const objects = pdfObjects(pdf);
      assert.match(objects, /\/Reason \(Approved \\\(final\\\)\)/);
      // Not ASCII: UTF-16BE with its byte order mark, in hex.
      assert.match(objects, /\/Location <FEFF005A00FC007200690063006800202713>/i);
      assert.match(objects, /\/ContactInfo \(legal@example\.com\)/);
      assert.match(objects, /\/SubFilter \/ETSI\.CAdES\.detached/);
      assert.match(objects, /\/FT \/Sig/);
      assert.match(objects, /\/Rect \[\s*0\s+0\s+0\s+0\s*\]/);
      assert.match(objects, /\/SigFlags 3/);
    });
  }

  it('signs with no texts at all ({})', async () => {
    assertSignedWhole(await pdfBytesOf(await generate(service, { data: { who: 'Ada' }, template: TEMPLATE, pdf: { signature: {} } })));
  });

  it('takes texts of 256 characters, outside the BMP too', async () => {
    const signature = { reason: '😀'.repeat(256), location: 'x'.repeat(256) };
    assertSignedWhole(
      await pdfBytesOf(await generate(service, { data: { who: 'Ada' }, template: TEMPLATE, typst: '0.14', pdf: { signature } })),
    );
  });

  it('a copy with one byte changed inside the signed range shows as invalid', async () => {
    const pdf = await pdfBytesOf(
      await generate(service, { data: { who: 'Ada' }, template: TEMPLATE, pdf: { signature: { reason: 'Approved' } } }),
    );
    const [, firstEnd] = byteRange(pdf);
    // A byte of the document's title in its Info dictionary: the file stays readable, its digest does not match.
    const at = pdf.indexOf('(Contract)');
    assert.ok(at > 0 && at < firstEnd!);
    const tampered = Buffer.from(pdf);
    tampered[at + 1] = 'K'.charCodeAt(0);
    const [signature] = pdfSignatures(tampered);
    assert.notEqual(signature!['Signature Validation'], 'Signature is Valid.');
    assert.match(signature!['Signature Validation']!, /Digest Mismatch|invalid/i);
  });

  it('a signed PDF/A-3b keeps its PDF/A declaration in the XMP and its attachment', async () => {
    const template =
      '#set document(title: "Invoice")\n= Invoice\n#pdf.attach("factur-x.xml", bytes("<Invoice/>"), relationship: "alternative", mime-type: "text/xml", description: "Invoice data")';
    const pdf = await pdfBytesOf(
      await generate(service, { data: {}, template, typst: '0.14', pdf: { standard: 'a-3b', signature: { reason: 'Invoice issued' } } }),
    );
    assertSignedWhole(pdf);
    const xmp = pdfXmp(pdf);
    assert.match(xmp, /<pdfaid:part>3</);
    assert.match(xmp, /<pdfaid:conformance>B</);
    assert.deepEqual(pdfAttachments(pdf), ['factur-x.xml']);
  });

  it('keeps a tagged page in structure tab order, and hides the widget of a PDF/UA document that is not PDF/A', async () => {
    // PDF/UA-1 7.18.3: a page with an annotation has /Tabs /S; 7.18.4: a widget shown on the page is tagged as a Form, and
    // a hidden one is exempt. PDF/A forbids hiding an annotation; an untagged document gets no tab order.
    const cases = [
      { pdf: { standard: 'ua-1' }, tabs: '/S', flags: 134 },
      { pdf: { standard: 'a-3a' }, tabs: '/S', flags: 132 },
      { pdf: { tagged: false }, tabs: undefined, flags: 132 },
    ];
    for (const { pdf: options, tabs, flags } of cases) {
      const pdf = await pdfBytesOf(
        await generate(service, { data: { who: 'us' }, template: TEMPLATE, typst: '0.14', pdf: { ...options, signature: {} } }),
      );
      assertSignedWhole(pdf);
      const { page, annotations } = pdfFirstPage(pdf);
      assert.equal(page['/Tabs'], tabs, JSON.stringify(options));
      const widget = annotations.find((a) => a['/FT'] === '/Sig');
      assert.equal(widget?.['/F'], flags, JSON.stringify(options));
    }
  });

  it('a signed Factur-X e-invoice keeps its Factur-X XMP and its one XML, after the e-invoice update', async () => {
    const example = (name: string) => readFileSync(new URL(`../../examples/${name}`, import.meta.url), 'utf8');
    const pdf = await pdfBytesOf(
      await generate(service, {
        data: JSON.parse(example('einvoice.json')) as unknown,
        template: example('einvoice.typ'),
        typst: '0.14',
        pdf: { einvoice: { profile: 'EN 16931' }, signature: { reason: 'Invoice issued' } },
      }),
    );
    assertSignedWhole(pdf);
    const xmp = pdfXmp(pdf);
    assert.match(xmp, /<pdfaid:part>3</);
    assert.match(xmp, /<fx:ConformanceLevel>EN 16931<\/fx:ConformanceLevel>/);
    assert.deepEqual(pdfAttachments(pdf), ['factur-x.xml']);
    // Typst's file, the e-invoice's update, then the signature's.
    assert.equal(pdf.toString('latin1').match(/startxref/g)?.length, 3);
  });

  it('signs a large body whose data the server located wrongly, with the texts of the exact layout', async () => {
    const pdf = await pdfBytesOf(await generate(service, largeBodyWithSignatureFirst('Large body')));
    assertSignedWhole(pdf);
    assert.match(pdfObjects(pdf), /\/Reason \(Large body\)/);
  });

  it('signs a PDF of several megabytes (hashed off the event loop)', async () => {
    const blob = randomBytes(3 * 1024 * 1024);
    const template = '= Attached\n#pdf.attach("blob.bin", read("blob.bin", encoding: none))';
    const body = { data: {}, template, typst: '0.14', assets: { 'blob.bin': blob.toString('base64') }, pdf: { signature: {} } };
    const pdf = await pdfBytesOf(await generate(service, body));
    assert.ok(pdf.length > 3 * 1024 * 1024, `${pdf.length} bytes`);
    assertSignedWhole(pdf);
  });

  it("keeps Typst's file byte for byte in front of the signature", async () => {
    const body = { data: { who: 'Ada' }, template: TEMPLATE, typst: '0.14' };
    const plain = await pdfBytesOf(await generate(service, body));
    const signed = await pdfBytesOf(await generate(service, { ...body, pdf: { signature: {} } }));
    // Typst's file is the same for the same input but its /ID and dates: compare the head, up to its first object's end.
    const head = plain.indexOf('endobj');
    assert.ok(signed.subarray(0, head).equals(plain.subarray(0, head)));
    assert.ok(signed.length > plain.length);
  });
});

describe('signing a PDF that already has incremental updates, or that another writer rewrote', () => {
  /** Typst's PDFs of both engines, with a link on page 1 (an annotation the widget joins). */
  const LINKED = '= Terms\nSee #link("https://example.com/terms")[the terms].\n#pagebreak()\nPage two.';
  let signer: PdfSigner;
  const typstPdfs: Record<string, Buffer> = {};
  before(async () => {
    signer = new PdfSigner(await loadSigningIdentity(identity.p12, identity.passwordFile));
    const service = await startService({ WORKERS: '1' });
    try {
      for (const typst of ['0.11', '0.14'])
        typstPdfs[typst] = await pdfBytesOf(await generate(service, { data: {}, template: LINKED, typst }));
    } finally {
      await service.stop();
    }
  });

  /** `pdf` as qpdf writes it with `args`. */
  function rewritten(pdf: Buffer, args: string[]): Buffer {
    const input = join(identity.dir, 'input.pdf');
    const output = join(identity.dir, 'output.pdf');
    writeFileSync(input, pdf);
    assert.equal(spawnSync('qpdf', [...args, input, output]).status, 0);
    return Buffer.from(spawnSync('cat', [output]).stdout);
  }

  const links = (pdf: Buffer) => pdfObjects(pdf).match(/\/URI \(https:\/\/example\.com\/terms\)/g)?.length ?? 0;

  for (const typst of ['0.11', '0.14']) {
    for (const args of [['--object-streams=generate'], ['--linearize'], ['--linearize', '--object-streams=generate'], ['--qdf']]) {
      it(`signs Typst ${typst}'s PDF after qpdf ${args.join(' ')}, keeping page 1's link`, async () => {
        const pdf = rewritten(typstPdfs[typst]!, args);
        const signed = await signer.sign(pdf, Buffer.alloc(0), {});
        assertSignedWhole(signed);
        assert.ok(signed.subarray(0, pdf.length).equals(pdf), 'the file signed is kept byte for byte');
        assert.equal(links(signed), links(pdf));
        assert.ok(links(pdf) >= 1);
      });
    }
  }

  it('signs a file whose last section is a cross-reference stream with object streams, and signs it again', async () => {
    const withStreams = rewritten(typstPdfs['0.14']!, ['--object-streams=generate']);
    assert.match(withStreams.toString('latin1'), /\/Type\s*\/XRef/);
    assert.match(withStreams.toString('latin1'), /\/Type\s*\/ObjStm/);
    const none = Buffer.alloc(0);
    const once = await signer.sign(withStreams, none, {});
    assertSignedWhole(once);
    const twice = await signer.sign(once, none, {});
    assertSignedWhole(twice, 2);
    const [first] = pdfSignatures(twice);
    assert.equal(first!['Signature Validation'], 'Signature is Valid.', 'the first signature still holds for its revision');
    assert.equal(first!['Total document signed'], undefined, 'the first signature covers its own revision only');
  });
});

describe('other keys', () => {
  it('signs with an EC key (P-256)', async () => {
    const ec = makeTestIdentity('ec');
    try {
      const service = await startService({ WORKERS: '1', ...ec.env });
      try {
        assertSignedWhole(await pdfBytesOf(await generate(service, { data: { who: 'Ada' }, template: TEMPLATE, pdf: { signature: {} } })));
      } finally {
        await service.stop();
      }
    } finally {
      ec.dispose();
    }
  });
});

describe('requests for a signature the service refuses', () => {
  let service: Service;
  before(async () => {
    service = await startService({ WORKERS: '1' });
  });
  after(async () => {
    await service.stop();
  });

  it('without an identity: 400 for a large body whose data the server located wrongly too', async () => {
    assert.equal(await errorOf(await generate(service, largeBodyWithSignatureFirst('x'))), MESSAGES.noSigningIdentity);
  });

  it('without an identity: 400, and /readyz says there is none', async () => {
    assert.equal(await errorOf(await generate(service, { data: {}, template: 'x', pdf: { signature: {} } })), MESSAGES.noSigningIdentity);
    assert.equal((await readiness(service)).signing, false);
  });

  const bad: [string, unknown, string][] = [
    ['an unknown key', { signature: { reasons: 'x' } }, MESSAGES.pdfSignatureKey],
    ['a text that is not a string', { signature: { reason: 5 } }, signatureText('reason')],
    ['a text that is null', { signature: { location: null } }, signatureText('location')],
    ['a text over 256 characters', { signature: { contact: 'é'.repeat(257) } }, signatureText('contact')],
    ['a signature that is not an object', { signature: true }, MESSAGES.pdfSignature],
    ['a signature that is an array', { signature: ['reason'] }, MESSAGES.pdfSignature],
  ];
  for (const [what, pdf, message] of bad) {
    it(`${what}: 400 naming the field`, async () => {
      assert.equal(await errorOf(await generate(service, { data: {}, template: 'x', pdf })), message);
    });
  }

  it('a text with an unpaired surrogate: 400', async () => {
    const body = '{"data":{},"template":"x","pdf":{"signature":{"reason":"a\\ud800b"}}}';
    assert.equal(await errorOf(await generate(service, body)), signatureText('reason'));
  });

  it('on the 0.11 engine a signature is no PDF export option: no "needs 0.14" refusal', async () => {
    assert.equal(
      await errorOf(await generate(service, { data: {}, template: 'x', typst: '0.11', pdf: { signature: {} } })),
      MESSAGES.noSigningIdentity,
    );
  });
});

describe('identities that stop the start', () => {
  /** Starts the service with `env` and returns its exit status and what it printed (it must not start). */
  function start(env: Record<string, string>): { status: number | null; output: string } {
    const result = spawnSync(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', API_KEYS: TEST_KEY, WORKERS: '1', SPARE_WORKERS: '0', ...env },
      encoding: 'utf8',
      timeout: 20_000,
    });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  it('a file that is not PKCS#12', () => {
    const broken = join(identity.dir, 'broken.p12');
    writeFileSync(broken, 'not a certificate at all');
    const { status, output } = start({ ...identity.env, SIGNING_P12_FILE: broken });
    assert.equal(status, 1);
    assert.match(output, /SIGNING_P12_FILE is not a PKCS#12 \(\.p12, \.pfx\) file/);
  });

  it('a wrong password', () => {
    const wrong = join(identity.dir, 'wrong-password');
    writeFileSync(wrong, 'not the password\n');
    const { status, output } = start({ ...identity.env, SIGNING_PASSWORD_FILE: wrong });
    assert.equal(status, 1);
    assert.match(output, /cannot be opened with the password in SIGNING_PASSWORD_FILE: the password is wrong or the file is damaged/);
    assert.doesNotMatch(output, /not the password/);
  });

  it('a file that cannot be read', () => {
    const { status, output } = start({ ...identity.env, SIGNING_P12_FILE: join(identity.dir, 'missing.p12') });
    assert.equal(status, 1);
    assert.match(output, /SIGNING_P12_FILE cannot be read: ENOENT/);
  });

  it('an encryption the service cannot read (OpenSSL -legacy) is named, with what to do', () => {
    const { status, output } = start({ ...identity.env, SIGNING_P12_FILE: identity.legacyP12() });
    assert.equal(status, 1);
    assert.match(output, /SIGNING_P12_FILE cannot be read .*OpenSSL 3/);
  });

  it('one setting without the other', () => {
    const { status, output } = start({ SIGNING_P12_FILE: identity.p12 });
    assert.equal(status, 1);
    assert.match(output, /SIGNING_P12_FILE and SIGNING_PASSWORD_FILE must be set together/);
  });
});
