/**
 * What signing reads of the request, against trusted oracles, with
 * fast-check: `pdf.signature` in the body check against JSON.parse, and the
 * PDF text strings made of its texts against their decoding. (The PDF it
 * signs is read by the one PDF reader: test/pdf-reader.test.ts.)
 * FUZZ_SCALE multiplies the case counts (the nightly set runs more).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { checkBody } from '../src/bytes/json-check.js';
import type { Range } from '../src/bytes/layout.js';
import { pdfTextString } from '../src/finish/signature-text.js';
import { MESSAGES, signatureText } from '../src/messages.js';
import { runs } from './support/fuzz-scale.js';

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

  /** Checks the body `bytes`, whose `pdf.signature` JSON.parse reads as `signature`, against that reading. */
  function expectSignature(bytes: Buffer, signature: Record<string, unknown>): void {
    const check = checkBody(bytes);
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
    const found = check.layout.signature ?? {};
    for (const [key, text] of entries) {
      const range: Range | undefined = found[key as 'reason'];
      assert.ok(range);
      assert.equal(decodePdfText(pdfTextString(bytes, range)), text);
    }
  }

  it('is taken exactly when JSON.parse finds known keys with strings of at most 256 characters; its texts decode to them', () => {
    fc.assert(
      fc.property(fc.dictionary(keys, member, { maxKeys: 4 }), (signature) => expectSignature(body(signature), signature)),
      { numRuns: runs(2000) },
    );
  });

  it('of a repeated key takes the last, as JSON.parse does, whatever an earlier one holds', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(keys, member), { maxLength: 8 }), (members) => {
        const text = `{${members.map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`).join(',')}}`;
        const bytes = Buffer.from(`{"data":{},"template":"x","pdf":{"signature":${text}}}`);
        expectSignature(bytes, JSON.parse(text) as Record<string, unknown>);
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
