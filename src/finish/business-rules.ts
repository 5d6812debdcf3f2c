/**
 * The business rules of an e-invoice, when the operator provides them
 * (EINVOICE_RULES): the official validation artefacts are XSLT stylesheets
 * compiled from Schematron (EN 16931's CII rules, KoSIT's XRechnung rules)
 * that write SVRL, one `svrl:failed-assert` per broken rule. They run in
 * the worker with SaxonJS (XSLT 3, the only such engine for JavaScript),
 * each stylesheet compiled once per worker at its start and kept.
 *
 * A failed assert flagged `warning` (or `information`) is a warning; any
 * other is an error. The XML becomes a string and a tree of JavaScript
 * objects here (SaxonJS takes nothing else): the worker collects them after
 * the job (worker.ts forgetStrings), as it does Typst's messages.
 */
import type { EinvoiceProfile } from './facturx.js';

/** One stylesheet and the profiles it applies to. */
export interface RuleFile {
  path: string;
  profiles: EinvoiceProfile[];
}

/** A failed assert: its id (`BR-CO-10`) and text. */
export interface RuleFailure {
  id: string;
  text: string;
}

export interface RuleOutcome {
  errors: RuleFailure[];
  warnings: RuleFailure[];
}

interface Saxon {
  getPlatform(): { parseXmlFromString(text: string): unknown };
  XPath: { evaluate(xpath: string, context: unknown, options?: Record<string, unknown>): unknown };
}

const SVRL = { svrl: 'http://purl.oclc.org/dsdl/svrl' };
/** fn:transform with `cache`: SaxonJS compiles a stylesheet location once and keeps it for the process. */
const TRANSFORM = "transform(map{'stylesheet-location': $location, 'source-node': $source, 'cache': true()})?output";

let saxon: Saxon | undefined;
let files: RuleFile[] = [];

const fileUrl = (path: string) => `file://${encodeURI(path)}`;

/** Loads SaxonJS and compiles each stylesheet (by running it on an empty invoice); throws when one does not compile. */
export async function loadRules(rules: RuleFile[]): Promise<void> {
  if (rules.length === 0) return;
  saxon = (await import('saxon-js')).default as unknown as Saxon;
  files = rules;
  for (const file of rules) transform(file, '<x/>');
}

/** Whether any stylesheet applies to `profile`. */
export const hasRules = (profile: EinvoiceProfile) => files.some((f) => f.profiles.includes(profile));

function transform(file: RuleFile, xml: string): unknown {
  const source = saxon!.getPlatform().parseXmlFromString(xml);
  return saxon!.XPath.evaluate(TRANSFORM, null, { params: { location: fileUrl(file.path), source } });
}

interface SvrlElement {
  getAttribute(name: string): string | null;
  textContent: string | null;
}

/** Runs every stylesheet for `profile` on the XML (its UTF-8 bytes), and sorts their failed asserts. */
export function checkRules(xml: Uint8Array, profile: EinvoiceProfile): RuleOutcome {
  const outcome: RuleOutcome = { errors: [], warnings: [] };
  const text = Buffer.from(xml.buffer, xml.byteOffset, xml.length).toString('utf8');
  for (const file of files.filter((f) => f.profiles.includes(profile))) {
    const report = transform(file, text);
    const asserts = saxon!.XPath.evaluate('//svrl:failed-assert', report, { namespaceContext: SVRL, resultForm: 'array' }) as SvrlElement[];
    for (const failed of asserts) {
      const flag = (failed.getAttribute('flag') ?? failed.getAttribute('role') ?? '').toLowerCase();
      const failure = { id: failed.getAttribute('id') ?? '', text: (failed.textContent ?? '').replace(/\s+/g, ' ').trim() };
      (flag === 'warning' || flag === 'information' ? outcome.warnings : outcome.errors).push(failure);
    }
  }
  return outcome;
}
