/**
 * The Factur-X / ZUGFeRD rules the service applies: for each profile
 * (the profiles themselves are in src/api-values.ts, where the server checks
 * a request's `profile` against them), the identifier it declares in the
 * XML, the file name and relationship of the embedded XML, the XSD that
 * checks it, and the XMP properties (with their PDF/A extension schema)
 * that name it. Pure data, no request content.
 */
import { type EinvoiceProfile, FACTURX_XSD_VERSION } from '../api-values.js';

/** The attachment name the XML has unless the request names another. */
export const DEFAULT_XML_NAME = 'factur-x.xml';

interface ProfileRules {
  /** `GuidelineSpecifiedDocumentContextParameter/ID` of the XML (XRECHNUNG: the prefix, then its version). */
  guideline: string;
  /** Whether `guideline` is a prefix (XRechnung's identifier ends in its version). */
  prefix?: true;
  /** The embedded file's name, as Factur-X (and ZUGFeRD for XRECHNUNG) requires it. */
  fileName: string;
  /** `/AFRelationship`: `Data` where the XML is less than the invoice people read, else `Alternative`. */
  relationship: 'Data' | 'Alternative';
  /** The XSD that checks the XML, a file of schemas/factur-x/. */
  xsd: string;
}

const xsd = (name: string) => `Factur-X_${FACTURX_XSD_VERSION}_${name}.xsd`;

export const PROFILE_RULES: Record<EinvoiceProfile, ProfileRules> = {
  MINIMUM: { guideline: 'urn:factur-x.eu:1p0:minimum', fileName: 'factur-x.xml', relationship: 'Data', xsd: xsd('MINIMUM') },
  'BASIC WL': { guideline: 'urn:factur-x.eu:1p0:basicwl', fileName: 'factur-x.xml', relationship: 'Data', xsd: xsd('BASICWL') },
  BASIC: {
    guideline: 'urn:cen.eu:en16931:2017#compliant#urn:factur-x.eu:1p0:basic',
    fileName: 'factur-x.xml',
    relationship: 'Alternative',
    xsd: xsd('BASIC'),
  },
  'EN 16931': { guideline: 'urn:cen.eu:en16931:2017', fileName: 'factur-x.xml', relationship: 'Alternative', xsd: xsd('EN16931') },
  EXTENDED: {
    guideline: 'urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended',
    fileName: 'factur-x.xml',
    relationship: 'Alternative',
    xsd: xsd('EXTENDED'),
  },
  // XRechnung's CII is EN 16931's syntax with national rules on top (its own XSLT, see business-rules.ts).
  XRECHNUNG: {
    guideline: 'urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_',
    prefix: true,
    fileName: 'xrechnung.xml',
    relationship: 'Alternative',
    xsd: xsd('EN16931'),
  },
};

/**
 * An XPath test of whether the guideline identifier at `path` declares
 * `profile`. The identifier is compared inside the XML library, so it never
 * becomes a JavaScript string in the worker (it is request content, and a
 * string cannot be wiped).
 */
export function guidelineTest(profile: EinvoiceProfile, path: string): string {
  const { guideline, prefix } = PROFILE_RULES[profile];
  const id = `normalize-space(${path})`;
  return prefix ? `starts-with(${id}, '${guideline}') and string-length(${id}) > ${guideline.length}` : `${id} = '${guideline}'`;
}

/** The Factur-X XMP namespace, its prefix, and the PDF/A namespaces that describe it. */
export const FX_NAMESPACE = 'urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#';
const FX_PREFIX = 'fx';
const FX_VERSION = '1.0';

/** The four `fx:` properties, as their PDF/A extension schema describes them (all Text, external). */
const FX_PROPERTIES = [
  { name: 'DocumentFileName', description: 'The name of the embedded XML document' },
  { name: 'DocumentType', description: 'The type of the hybrid document in capital letters, e.g. INVOICE or ORDER' },
  { name: 'Version', description: 'The actual version of the standard applying to the embedded XML document' },
  { name: 'ConformanceLevel', description: 'The conformance level of the embedded XML document' },
] as const;

const PDFA_NAMESPACES =
  'xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/" xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#" xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#"';

/** The extension schema's entry (an `rdf:li` of `pdfaExtension:schemas`' Bag) describing the `fx:` properties. */
export function fxSchemaEntry(): string {
  const properties = FX_PROPERTIES.map(
    (p) =>
      `<rdf:li rdf:parseType="Resource"><pdfaProperty:name>${p.name}</pdfaProperty:name><pdfaProperty:valueType>Text</pdfaProperty:valueType>` +
      `<pdfaProperty:category>external</pdfaProperty:category><pdfaProperty:description>${p.description}</pdfaProperty:description></rdf:li>`,
  ).join('');
  return (
    `<rdf:li rdf:parseType="Resource"><pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>` +
    `<pdfaSchema:namespaceURI>${FX_NAMESPACE}</pdfaSchema:namespaceURI><pdfaSchema:prefix>${FX_PREFIX}</pdfaSchema:prefix>` +
    `<pdfaSchema:property><rdf:Seq>${properties}</rdf:Seq></pdfaSchema:property></rdf:li>`
  );
}

/** An `rdf:Description` with the four `fx:` properties of an invoice of `profile`. */
export function fxDescription(profile: EinvoiceProfile): string {
  return (
    `<rdf:Description rdf:about="" xmlns:${FX_PREFIX}="${FX_NAMESPACE}">` +
    `<fx:DocumentType>INVOICE</fx:DocumentType><fx:DocumentFileName>${PROFILE_RULES[profile].fileName}</fx:DocumentFileName>` +
    `<fx:Version>${FX_VERSION}</fx:Version><fx:ConformanceLevel>${profile}</fx:ConformanceLevel></rdf:Description>`
  );
}

/** An `rdf:Description` declaring the extension schemas, for an XMP that has none yet. */
export function extensionDescription(): string {
  return `<rdf:Description rdf:about="" ${PDFA_NAMESPACES}><pdfaExtension:schemas><rdf:Bag>${fxSchemaEntry()}</rdf:Bag></pdfaExtension:schemas></rdf:Description>`;
}
