/**
 * The request's shapes for the OpenAPI document (openapi.ts): the JSON body
 * and the multipart form. Descriptive only: the service checks a body byte
 * by byte (bytes/json-check.ts, request/form-check.ts), never against these.
 */
import {
  DEFAULT_MAX_IMAGE_PIXELS,
  EINVOICE_PROFILES,
  MAX_BODY_BYTES,
  PDF_STANDARDS,
  SIGNATURE_FIELDS,
  SIGNATURE_TEXT_CHARS,
  type SignatureField,
} from '../api-values.js';
import { MAX_ASSET_NAME } from '../bytes/asset-names.js';
import { MAX_ASSETS } from '../bytes/asset-table.js';
import { DEFAULT_ENGINE, ENGINE_IDS, ENGINE_VERSIONS } from '../engines.js';

const MB = 1024 * 1024;

const SIGNATURE_FIELD_MEANINGS: Record<SignatureField, string> = {
  reason: "Why the document is signed (the signature's /Reason).",
  location: 'Where it is signed (/Location).',
  contact: 'How to reach the signer (/ContactInfo).',
};

/** The request body's schema, for the OpenAPI document (the body is checked byte by byte in src/bytes/json-check.ts). */
export const generateBodySchema = {
  type: 'object',
  required: ['data', 'template'],
  properties: {
    data: { type: 'object', description: 'Exposed to the template as the Typst dictionary `data`.' },
    template: { type: 'string', description: 'Typst markup.' },
    assets: {
      type: 'object',
      description:
        'Files the template reads by name (`#image("logo.png")`, `#read`, `#csv`, `#json`, `#include`), by relative or absolute path. ' +
        'Names: relative paths of any printable Unicode (spaces included) in segments joined by `/`; no `.`, `..` or empty segment, no leading `/` or `~`, no backslash, no control character, ' +
        `at most ${MAX_ASSET_NAME} bytes of UTF-8; at most ${MAX_ASSETS.toLocaleString('en')} entries. ` +
        'Values: base64 (standard alphabet; padding and ASCII whitespace tolerated) or a `data:<type>;base64,` URL. ' +
        `They count toward the ${MAX_BODY_BYTES / MB} MB body limit. ` +
        `A PNG, JPEG, GIF or WebP (told by its first bytes) whose header declares more pixels than the service allows (MAX_IMAGE_PIXELS, ${DEFAULT_MAX_IMAGE_PIXELS / 1e6} megapixels unless set) is refused with 400 before any compile.`,
      maxProperties: MAX_ASSETS,
      propertyNames: {
        type: 'string',
        maxLength: MAX_ASSET_NAME,
        pattern: '^(?![/~])(?!.*//)(?!(.*/)?\\.{1,2}(/|$))(?!.*/$)[^\\\\\\u0000-\\u001f\\u007f-\\u009f]+$',
      },
      additionalProperties: { type: 'string', description: 'base64, or data:<type>;base64,<base64>' },
      examples: [{ 'logo.png': 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==' }],
    },
    typst: {
      enum: [...ENGINE_IDS, ...ENGINE_IDS.map((id) => ENGINE_VERSIONS[id]), null],
      description:
        `The Typst engine: ${ENGINE_IDS.map((id) => `\`${id}\` (Typst ${ENGINE_VERSIONS[id]})`).join(' or ')}, or the exact version. ` +
        `Absent or null: the operator's default (TYPST_VERSION, \`${DEFAULT_ENGINE}\` unless set). ` +
        'The answer names the version in `X-Typst-Version`.',
    },
    pdf: {
      type: ['object', 'null'],
      description:
        'PDF output options. `standard` and `tagged` are options of the Typst 0.14 engine (with 0.11: 400): a standard Typst checks the document against, and declares in the XMP metadata; ' +
        "what the standard forbids (transparency under PDF/A-1, an attached file under PDF/A-2, a missing title under PDF/UA-1, ...) is a 400 with Typst's message. " +
        "`signature`, on either engine, asks for the PDF signed by the service's identity.",
      additionalProperties: false,
      properties: {
        standard: {
          enum: [...PDF_STANDARDS],
          description: 'PDF version (`1.4` to `2.0`), PDF/A level (`a-1b` to `a-4e`) or PDF/UA-1 (`ua-1`).',
        },
        tagged: { type: 'boolean', description: 'Write a tagged PDF (default true; PDF/A-*a and PDF/UA-1 need it).' },
        einvoice: {
          type: 'object',
          description:
            'Make the PDF a Factur-X / ZUGFeRD e-invoice (PDF/A-3: `standard` defaults to `a-3b` and must be an A-3 level). ' +
            'The CII XML is an asset (the service attaches it) or attached by the template with `pdf.attach`; the answer holds it once, ' +
            'as `factur-x.xml` (`xrechnung.xml` for XRECHNUNG) with the `/AFRelationship` of its profile, and the Factur-X XMP properties. ' +
            "The XML is checked against the Factur-X XSD of its profile and, when the operator set EINVOICE_RULES, the business rules: a failure is a 400; the rules' warnings are in `X-Einvoice-Warnings`.",
          additionalProperties: false,
          properties: {
            xml: {
              type: 'string',
              minLength: 1,
              maxLength: MAX_ASSET_NAME,
              description: 'Name of the XML asset or attachment (default `factur-x.xml`).',
            },
            profile: {
              enum: [...EINVOICE_PROFILES],
              description:
                'The Factur-X profile (default: the one the XML declares in `GuidelineSpecifiedDocumentContextParameter/ID`; both given and different: 400).',
            },
          },
        },
        signature: {
          type: 'object',
          description:
            "Sign the PDF by the service's identity (SIGNING_P12_FILE): a PAdES baseline B-B signature (CMS detached, SHA-256, the certificate chain), " +
            "in an invisible field on page 1, added as an incremental update, at the server's time. A service without an identity answers 400. " +
            '`GET /readyz` says whether this one has one (`signing`).',
          additionalProperties: false,
          properties: Object.fromEntries(
            SIGNATURE_FIELDS.map((field) => [
              field,
              { type: 'string', maxLength: SIGNATURE_TEXT_CHARS, description: SIGNATURE_FIELD_MEANINGS[field] },
            ]),
          ),
        },
      },
      examples: [
        { standard: 'a-3b' },
        { einvoice: { xml: 'factur-x.xml', profile: 'EN 16931' } },
        { signature: { reason: 'Approved', location: 'Berlin' } },
      ],
    },
  },
} as const;

/** The same request as a multipart form, for the OpenAPI document (checked byte by byte in request/form-check.ts). */
export const generateFormSchema = {
  type: 'object',
  required: ['data', 'template'],
  properties: {
    template: { type: 'string', format: 'binary', description: 'Typst markup (UTF-8), a file or a field.' },
    data: { type: 'string', format: 'binary', description: 'A JSON object, a file or a field.' },
    typst: { enum: [...ENGINE_IDS, ...ENGINE_IDS.map((id) => ENGINE_VERSIONS[id])], description: 'As in JSON.' },
    pdf: { type: 'string', description: 'The JSON object of `pdf` in JSON, as text.' },
  },
  additionalProperties: {
    type: 'string',
    format: 'binary',
    description:
      `Every other part is a file (it must carry a file name), an asset under its file name, its bytes as they are; at most ${MAX_ASSETS.toLocaleString('en')}. ` +
      'A field of another name, or a second part of one name, is refused.',
  },
} as const;
