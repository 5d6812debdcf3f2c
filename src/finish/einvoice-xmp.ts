/**
 * Adds the Factur-X properties to a document's XMP packet, keeping every
 * byte Typst wrote: the `fx:` properties go into an `rdf:Description` of
 * their own, and their PDF/A extension schema into the `pdfaExtension:schemas`
 * Bag Typst already declares (one property may appear only once, so a
 * second `pdfaExtension:schemas` would be invalid), or into a description
 * of its own when there is none.
 *
 * Works on bytes, by the markers Typst's XMP writer emits, so the title and
 * the other content of the packet never become JavaScript strings.
 */
import type { EinvoiceProfile } from '../api-values.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { extensionDescription, FX_NAMESPACE, fxDescription, fxSchemaEntry } from './facturx.js';

class XmpError extends Error {
  override name = 'XmpError';
}

const RDF_END = Buffer.from('</rdf:RDF>');
const SCHEMAS_END = Buffer.from('</rdf:Bag></pdfaExtension:schemas>');
const SCHEMAS_START = Buffer.from('<pdfaExtension:schemas>');

/** The packet with the Factur-X XMP added, in a buffer of its own (the caller wipes both). */
export function mergeFacturXmp(xmp: Buffer, profile: EinvoiceProfile): Buffer {
  if (xmp.indexOf(FX_NAMESPACE) >= 0) throw new XmpError('the XMP already declares Factur-X properties');
  const rdfEnd = xmp.lastIndexOf(RDF_END);
  if (rdfEnd < 0) throw new XmpError('the XMP has no rdf:RDF element');
  const inserts: { at: number; bytes: Buffer }[] = [];
  const schemasAt = xmp.indexOf(SCHEMAS_START);
  if (schemasAt >= 0) {
    const end = xmp.indexOf(SCHEMAS_END, schemasAt);
    if (end < 0 || xmp.indexOf(SCHEMAS_START, schemasAt + 1) >= 0) throw new XmpError('the XMP extension schemas are not one rdf:Bag');
    inserts.push({ at: end, bytes: Buffer.from(fxSchemaEntry()) });
    inserts.push({ at: rdfEnd, bytes: Buffer.from(fxDescription(profile)) });
  } else {
    inserts.push({ at: rdfEnd, bytes: Buffer.from(extensionDescription() + fxDescription(profile)) });
  }
  const out = ownedBuffer(xmp.length + inserts.reduce((n, i) => n + i.bytes.length, 0));
  let from = 0;
  let to = 0;
  for (const insert of inserts) {
    to += xmp.copy(out, to, from, insert.at);
    to += insert.bytes.copy(out, to);
    from = insert.at;
  }
  xmp.copy(out, to, from);
  return out;
}
