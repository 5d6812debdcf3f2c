/**
 * Finishes a Typst PDF as a Factur-X / ZUGFeRD e-invoice, in the worker
 * that made it (it holds the job's assets and the PDF, so neither crosses
 * the pipe twice, and a refusal is answered before any PDF leaves):
 *
 * 1. find the XML: attached by the template under its name (as the
 *    template gave it, or its plain file name: attachments.ts), else the
 *    request's asset of that name;
 * 2. check it (xml-schema.ts: well-formed, profile, XSD; business-rules.ts
 *    when the operator gave rules);
 * 3. append one incremental update (incremental-update.ts) that holds it
 *    exactly once, under the profile's file name with its /AFRelationship,
 *    listed in the catalog's /AF and the EmbeddedFiles name tree (other
 *    attachments kept), and the document's XMP with the Factur-X
 *    properties merged in (einvoice-xmp.ts).
 *
 * Every buffer that held the XML or the XMP is wiped before this returns.
 */
import { transcode } from 'node:buffer';
import { deflateSync } from 'node:zlib';
import type { EinvoiceProfile } from '../api-values.js';
import { checkRules, hasRules, type RuleFailure } from './business-rules.js';
import { PROFILE_RULES } from './facturx.js';
import { embeddedFile, nameTreeEntries } from './attachments.js';
import { mergeFacturXmp } from './einvoice-xmp.js';
import { appendUpdate, type NewObject, valueObject } from './incremental-update.js';
import { PdfObjects } from './pdf-objects.js';
import { entryOf } from './pdf-syntax.js';
import { asDict, name, type PdfDict, PdfRef, PdfString, type PdfValue } from './pdf-values.js';
import { checkXml, type XmlRefusal } from './xml-schema.js';
import { wipe } from '../retention/wipe.js';

export interface EinvoiceRequest {
  /** The XML's name as the request gives it, in the forms a PDF text string writes it (textForms; the caller wipes them). */
  xmlForms: Buffer[];
  /** The object number of the file specification the template attached under that name, as it gave it (attachments.ts: namedSpec). */
  spec?: number;
  profile?: EinvoiceProfile;
  /** The request's asset of that name, decoded, if there is one (the caller wipes it). */
  asset: () => Buffer | undefined;
}

export type EinvoiceFailure =
  | { kind: 'no-xml' }
  | { kind: 'xml'; refusal: XmlRefusal }
  | { kind: 'rules'; errors: RuleFailure[] }
  /** The template attached another file under the name the XML must have (`fileName`). */
  | { kind: 'name-taken'; fileName: string };

/** `ruled`: the operator's business rules checked the XML (their XSLT engine made JavaScript strings of it). */
export type Finished = { ok: true; pdf: Buffer; warnings: RuleFailure[]; ruled: boolean } | { ok: false; failure: EinvoiceFailure };

/** A name-tree key or file name as PDF text strings write it: PDFDocEncoding (ASCII here) or UTF-16BE with its mark. */
export function textForms(utf8: Buffer): Buffer[] {
  const forms: Buffer[] = [];
  if (utf8.every((b) => b < 0x80)) forms.push(Buffer.from(utf8));
  // Transcoded bytes to bytes: the name (request content) never becomes a JavaScript string.
  // A name that is not UTF-8 (a lone surrogate escaped in JSON) names no attachment Typst wrote.
  let utf16: Buffer;
  try {
    utf16 = transcode(utf8, 'utf8', 'utf16le').swap16();
  } catch {
    return forms;
  }
  forms.push(Buffer.concat([Buffer.from([0xfe, 0xff]), utf16]));
  wipe(utf16);
  return forms;
}

export function finishEinvoice(typstPdf: Buffer, request: EinvoiceRequest): Finished {
  const objects = new PdfObjects(typstPdf);
  try {
    return finish(objects, request);
  } finally {
    // The strings read from the PDF (its title, the attachments' names and descriptions).
    objects.wipe();
  }
}

function finish(objects: PdfObjects, request: EinvoiceRequest): Finished {
  const root = objects.root();
  const catalog = asDict(objects.read(objects.value(root)));
  if (!catalog) throw new Error('the PDF catalog is not a dictionary');
  const names = asDict(objects.follow(catalog.get('Names')));
  const attachments = nameTreeEntries(objects, names?.get('EmbeddedFiles'));
  const attached =
    attachments.find((a) => a.spec instanceof PdfRef && a.spec.num === request.spec) ??
    attachments.find((a) => request.xmlForms.some((form) => form.equals(a.key)));

  const attachedFile = attached && embeddedFile(objects, attached.spec);
  let xml = attachedFile ? objects.streamData(attachedFile) : undefined;
  xml ??= request.asset();
  if (!xml) return { ok: false, failure: { kind: 'no-xml' } };
  let xmp: Buffer | undefined;
  try {
    const checked = checkXml(xml, request.profile);
    if (!checked.ok) return { ok: false, failure: { kind: 'xml', refusal: checked.refusal } };
    const { profile } = checked;
    let warnings: RuleFailure[] = [];
    if (hasRules(profile)) {
      const rules = checkRules(xml, profile);
      if (rules.errors.length > 0) return { ok: false, failure: { kind: 'rules', errors: rules.errors } };
      warnings = rules.warnings;
    }
    const rules = PROFILE_RULES[profile];
    // The XML must be the only file of its Factur-X name: another one the template attached under it is refused, not dropped.
    const target = Buffer.from(rules.fileName);
    const targetForms = textForms(target);
    if (attachments.some((a) => a !== attached && targetForms.some((form) => form.equals(a.key)))) {
      return { ok: false, failure: { kind: 'name-taken', fileName: rules.fileName } };
    }
    const updated: NewObject[] = [];
    let next = objects.size;

    // The embedded file and its specification (a new version of the template's, when it made one).
    const infoEntry = entryOf(objects.pdf, objects.trailer, '/Info');
    const info = infoEntry && asDict(objects.follow(objects.read({ bytes: objects.pdf, span: infoEntry })));
    const modDate = info?.get('ModDate');
    const params: PdfDict = new Map<string, PdfValue>([['Size', xml.length]]);
    if (modDate instanceof PdfString) params.set('ModDate', modDate);
    const fileNum = next++;
    const file = new Map<string, PdfValue>([
      ['Type', name('EmbeddedFile')],
      ['Subtype', name('text/xml')],
      ['Filter', name('FlateDecode')],
      ['Params', params],
    ]);
    // Typst's compressed data as it is, where it can be (compressing it again costs more than the rest of the update).
    updated.push(valueObject(fileNum, file, (attachedFile && objects.flateData(attachedFile)) || deflateSync(xml)));
    const specNum = attached?.spec instanceof PdfRef ? attached.spec.num : next++;
    const fileName = new PdfString(Buffer.from(rules.fileName));
    const fileRef = new PdfRef(fileNum, 0);
    updated.push(
      valueObject(
        specNum,
        new Map<string, PdfValue>([
          ['Type', name('Filespec')],
          ['F', fileName],
          ['UF', fileName],
          [
            'EF',
            new Map<string, PdfValue>([
              ['F', fileRef],
              ['UF', fileRef],
            ]),
          ],
          ['AFRelationship', name(rules.relationship)],
          ['Desc', new PdfString(Buffer.from(`Factur-X invoice (${profile})`))],
        ]),
      ),
    );
    // The template's own specification keeps its generation (the update writes it under the same one).
    const specRef = attached?.spec instanceof PdfRef ? attached.spec : new PdfRef(specNum, 0);

    // The name tree, flat and sorted: the other attachments, and the XML once under its Factur-X name.
    const kept = attachments.filter((a) => a !== attached);
    const entries = [...kept, { key: target, spec: specRef as PdfValue }].sort((a, b) => Buffer.compare(a.key, b.key));
    const embeddedFiles: PdfDict = new Map([['Names', entries.flatMap((e) => [new PdfString(e.key), e.spec])]]);
    const newNames: PdfDict = new Map(names ?? []);
    newNames.set('EmbeddedFiles', embeddedFiles);

    // /AF: the associated files the template listed, and the XML once (a specification of the template's is replaced).
    const af = objects.follow(catalog.get('AF'));
    const associated = (Array.isArray(af) ? af : []).filter((v) => !(v instanceof PdfRef && v.num === specNum));
    associated.push(specRef);

    // The XMP: Typst's packet with the Factur-X properties and their extension schema.
    const metadataRef = catalog.get('Metadata');
    if (!(metadataRef instanceof PdfRef)) throw new Error('the PDF catalog has no /Metadata stream');
    const metadata = asDict(objects.follow(metadataRef));
    if (!metadata) throw new Error('the PDF /Metadata is not a stream');
    const packet = objects.streamData(metadataRef);
    try {
      xmp = mergeFacturXmp(packet, profile);
    } finally {
      wipe(packet);
    }
    const metadataDict: PdfDict = new Map(metadata);
    metadataDict.delete('Filter');
    metadataDict.delete('DecodeParms');
    updated.push(valueObject(metadataRef.num, metadataDict, xmp));

    const newCatalog: PdfDict = new Map(catalog);
    newCatalog.set('Names', newNames);
    newCatalog.set('AF', associated);
    updated.push(valueObject(root.num, newCatalog));

    const { pdf } = appendUpdate(objects, updated);
    return { ok: true, pdf, warnings, ruled: hasRules(profile) };
  } finally {
    wipe(xml);
    wipe(xmp);
  }
}
