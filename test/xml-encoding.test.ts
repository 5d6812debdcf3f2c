/**
 * Whether an e-invoice's XML says it is UTF-8 (src/finish/xml-encoding.ts),
 * against libxml2's own reading of its start: the encoding it finds when
 * left to decide (`XmlDocument.encoding`: the declared name, the one its
 * byte order mark or first bytes give, or none for UTF-8 by default), over
 * declarations of every shape the grammar allows and some it does not.
 * libxml2 lets a UTF-8 byte order mark win over a declaration of another
 * encoding; the service refuses such an XML (the declaration lies to whoever
 * reads the XML next), so the oracle reads the XML after the mark.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { XmlDocument } from 'libxml2-wasm';
import { isUtf8Xml } from '../src/finish/xml-encoding.js';
import { runs } from './support/fuzz-scale.js';

/** libxml2's verdict, or undefined when it refuses the document (then the service refuses it too, as malformed). */
function libxml2SaysUtf8(xml: Buffer): boolean | undefined {
  let doc: XmlDocument;
  try {
    doc = XmlDocument.fromBuffer(xml);
  } catch {
    return undefined;
  }
  try {
    const encoding = doc.encoding;
    return encoding === null || /^utf-?8$/i.test(encoding);
  } finally {
    doc.dispose();
  }
}

const hasUtf8Mark = (xml: Buffer) => xml[0] === 0xef && xml[1] === 0xbb && xml[2] === 0xbf;

const space = fc.stringMatching(/^[ \t\r\n]{1,3}$/);
const maybeSpace = fc.oneof(fc.constant(''), space);
const quote = fc.constantFrom('"', "'");
const encodingName = fc.oneof(
  fc.constantFrom('UTF-8', 'utf-8', 'Utf-8', 'UTF8', 'utf8', 'ISO-8859-1', 'latin1', 'US-ASCII', 'UTF-16', 'windows-1252', 'UTF-16LE'),
  fc.stringMatching(/^[A-Za-z][A-Za-z0-9._-]{0,12}$/),
);

/** `name = "value"` with the spaces and quotes the grammar allows, after white space. */
const pair = (name: string, value: fc.Arbitrary<string>) =>
  fc.tuple(space, maybeSpace, maybeSpace, quote, value).map(([s, a, b, q, v]) => `${s}${name}${a}=${b}${q}${v}${q}`);

const declaration = fc
  .tuple(
    pair('version', fc.constantFrom('1.0', '1.1')),
    fc.option(pair('encoding', encodingName), { nil: undefined }),
    fc.option(pair('standalone', fc.constantFrom('yes', 'no')), { nil: undefined }),
    maybeSpace,
  )
  .map(([version, encoding, standalone, end]) => `<?xml${version}${encoding ?? ''}${standalone ?? ''}${end}?>`);

/** What may follow: elements and processing instructions that look like a declaration's parts. */
const rest = fc.constantFrom(
  '<r/>',
  '\n<r a="encoding=\'UTF-16\'"/>',
  '<?xml-stylesheet encoding="UTF-16"?><r/>',
  '<!-- encoding="latin1" --><r>é</r>',
);

const document = fc.tuple(fc.option(declaration, { nil: undefined }), rest).map(([decl, body]) => `${decl ?? ''}${body}`);

/** A document in UTF-8, with or without its byte order mark: bytes in which a declaration reads as ASCII. */
const utf8 = fc
  .tuple(document, fc.boolean())
  .map(([text, mark]) => Buffer.concat([Buffer.from(mark ? [0xef, 0xbb, 0xbf] : []), Buffer.from(text)]));

/** A document in UTF-16, with or without a byte order mark. */
const utf16 = fc.tuple(document, fc.constantFrom('le-mark', 'be-mark', 'le')).map(([text, form]) => {
  const le = Buffer.from(text, 'utf16le');
  if (form === 'le') return le;
  return form === 'le-mark'
    ? Buffer.concat([Buffer.from([0xff, 0xfe]), le])
    : Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(le).swap16()]);
});

describe("an e-invoice XML's encoding", () => {
  it('is UTF-8 exactly when libxml2, left to decide, reads the declaration as naming UTF-8 or nothing', () => {
    fc.assert(
      fc.property(utf8, (xml) => {
        const oracle = libxml2SaysUtf8(xml.subarray(hasUtf8Mark(xml) ? 3 : 0));
        if (oracle !== undefined) assert.equal(isUtf8Xml(xml), oracle);
      }),
      { numRuns: runs(2000) },
    );
  });

  it('is not UTF-8 in UTF-16, which libxml2 told to read UTF-8 refuses as well', () => {
    fc.assert(
      fc.property(utf16, (xml) => {
        assert.equal(isUtf8Xml(xml), false);
        assert.throws(() => XmlDocument.fromBuffer(xml, { encoding: 'UTF-8' }).dispose());
      }),
      { numRuns: runs(500) },
    );
  });

  it('reads any bytes without throwing, and a declaration cut short as UTF-8 (the parser then refuses it)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        isUtf8Xml(bytes);
      }),
      { numRuns: runs(2000) },
    );
    for (const cut of ['<?xml version="1.0" encoding="UTF-16"', '<?xml version="1.0" encoding=UTF-16?>', '<?xml encoding="UTF-16"?>']) {
      assert.equal(isUtf8Xml(Buffer.from(cut)), true, cut);
      assert.equal(libxml2SaysUtf8(Buffer.from(`${cut}<r/>`)), undefined, `libxml2 refuses ${cut}`);
    }
  });
});
