/**
 * libxml2's WebAssembly memory after an e-invoice's XSD check and the
 * job's end (src/finish/xml-schema.ts): nothing of the XML is left in it, for an
 * invoice that fits in the memory kept for checks and for one that makes
 * the memory grow, and a check after it grew still passes. The memory is
 * found as the module instantiates it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';

let memory: WebAssembly.Memory | undefined;
const instantiate = WebAssembly.instantiate;
(WebAssembly as { instantiate: unknown }).instantiate = async (...args: unknown[]) => {
  const result = await (instantiate as (...a: unknown[]) => Promise<unknown>).apply(WebAssembly, args);
  const exports = ((result as { instance?: WebAssembly.Instance }).instance ?? (result as WebAssembly.Instance)).exports;
  for (const value of Object.values(exports)) if (value instanceof WebAssembly.Memory) memory = value;
  return result;
};
const { checkXml, forgetCheckedXml, loadSchemas } = await import('../src/finish/xml-schema.js');

const INVOICE = readFileSync(new URL('../../test/fixtures/einvoice/en16931.xml', import.meta.url), 'latin1');

/** The invoice with `marker` as the seller's name, after `padding` bytes of other elements. */
function invoiceWith(marker: string, padding: number): Buffer {
  const notes = '<ram:IncludedNote><ram:Content>n</ram:Content></ram:IncludedNote>'.repeat(Math.ceil(padding / 64));
  const xml = INVOICE.replace(/<ram:Name>[^<]*<\/ram:Name>/, `<ram:Name>${marker}</ram:Name>`).replace(
    '<rsm:ExchangedDocument>',
    `<rsm:ExchangedDocument><!-- ${marker} -->`,
  );
  return Buffer.from(padding ? xml.replace('</rsm:ExchangedDocument>', `${notes}</rsm:ExchangedDocument>`) : xml, 'latin1');
}

function copiesInMemory(marker: string): number {
  const bytes = Buffer.from(memory!.buffer);
  let count = 0;
  for (let at = bytes.indexOf(marker); at >= 0; at = bytes.indexOf(marker, at + 1)) count++;
  return count;
}

describe('libxml2 memory after an XSD check', () => {
  before(() => loadSchemas());

  for (const [name, padding] of [
    ['an invoice of 8 KB', 0],
    ['an invoice of 3 MB, which grows the memory', 3_000_000],
    ['an invoice of 8 KB after the memory grew', 0],
  ] as const) {
    it(`holds nothing of ${name}`, () => {
      const marker = `XMLMARK${Math.random().toString(36).slice(2)}`;
      const xml = invoiceWith(marker, padding);
      const grownBefore = memory?.buffer.byteLength ?? 0;
      const check = checkXml(xml, undefined);
      assert.ok(memory, 'libxml2 instantiated its memory');
      xml.fill(0);
      // The check leaves it to the job's end: the copies are there until then.
      assert.ok(copiesInMemory(marker) > 0, "the XML is in libxml2's memory after its check");
      forgetCheckedXml();
      assert.equal(copiesInMemory(marker), 0);
      if (padding) assert.ok(memory.buffer.byteLength > grownBefore, 'the check grew the memory');
      if (!padding) assert.deepEqual(check, { ok: true, profile: 'EN 16931' });
    });
  }
});
