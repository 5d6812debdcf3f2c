/**
 * The thread that runs an e-invoice's business rules (EINVOICE_RULES), in
 * the worker that checks the e-invoice (business-rules.ts asks it): the
 * official validation artefacts are XSLT stylesheets compiled from
 * Schematron (EN 16931's CII rules, KoSIT's XRechnung rules) that write
 * SVRL, one `svrl:failed-assert` per broken rule. They run with SaxonJS 2
 * (XSLT 3, the only XSLT 2/3 engine for JavaScript), each stylesheet
 * compiled once when the thread starts and kept (see compile).
 *
 * A failed assert flagged `warning` (or `information`) is a warning; any
 * other is an error. The XML becomes a string and a tree of JavaScript
 * objects here (SaxonJS takes nothing else): once it has answered, the
 * thread clears its own heap of them (isolate-strings.ts), while the
 * worker goes on with the job.
 *
 * Why a thread of its own: SaxonJS alone is 18 MiB of V8's heap, and the
 * compiled rules more. In the worker's own heap, every collection of the
 * whole heap walked them: the clearing after each failed template or job
 * with assets took 155 to 200 ms instead of 33 to 51 on Node 22 (70 to 85
 * and 18 to 40 on Node 24), close to the retention scan's 300 ms.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { EinvoiceProfile } from '../api-values.js';
import type { RuleFile } from '../config.js';
import { forgetAllStrings } from '../retention/isolate-strings.js';

/** A failed assert: its id (`BR-CO-10`) and text. */
export interface RuleFailure {
  id: string;
  text: string;
}

export interface RuleOutcome {
  errors: RuleFailure[];
  warnings: RuleFailure[];
}

/** What the thread is started with (business-rules.ts). */
export interface RulesThreadData {
  rules: RuleFile[];
  /** The port it takes checks on and answers on. */
  port: MessagePort;
  /** One Int32: set to ANSWERED, and notified, once the answer is on the port. */
  signal: SharedArrayBuffer;
}

/** A check: the XML's UTF-8 bytes, in a buffer of their own handed over (transferred), and its profile. */
export interface RulesCheck {
  xml: ArrayBuffer;
  profile: EinvoiceProfile;
}

/** The thread's first message, to the worker (its stylesheets compiled, or why not); then one answer per check, on the port. */
export type RulesAnswer = { ready: true } | { outcome: RuleOutcome } | { error: string };

const ANSWERED = 1;

/** The parts of SaxonJS 2.7 used here (it ships no types). */
interface Saxon {
  getPlatform(): { parseXmlFromString(text: string): XmlNode; resource(name: 'compiler'): SefNode };
  checkOptions(options: Record<string, unknown>): { principalResult: unknown };
  internalTransform(stylesheet: SefNode, source: XmlNode, options: { principalResult: unknown }): void;
  XdmMap: new () => { inSituPut(key: unknown, value: unknown[]): void };
  XS: { QName: { fromParts(prefix: string, uri: string, local: string): unknown } };
  XPath: {
    evaluate(xpath: string, context: unknown, options?: Record<string, unknown>): unknown;
    sefToJSON(node: unknown, relocatable: boolean): SefNode;
  };
}

interface XmlNode {
  _saxonBaseUri?: string;
  firstChild?: unknown;
}

/** A compiled stylesheet (SEF): a tree of instructions, each knowing its parent once `withParents` ran. */
interface SefNode {
  C?: SefNode[];
  parentNode?: SefNode;
}

const SVRL = { svrl: 'http://purl.oclc.org/dsdl/svrl' };

/*
 * SaxonJS and the operator's compiled stylesheets: set once at the
 * thread's start and only read after that. They hold no request content
 * (an XML's tree and report are made per check and dropped).
 */
let saxon: Saxon | undefined;
let compiled: { file: RuleFile; sef: SefNode }[] = [];

function withParents(node: SefNode): SefNode {
  for (const child of node.C ?? []) {
    child.parentNode = node;
    withParents(child);
  }
  return node;
}

const first = (result: unknown) => (Array.isArray(result) ? result[0] : result);

/**
 * Compiles a stylesheet to SEF with the XSLT compiler SaxonJS carries, the
 * steps its own fn:transform and its xslt3 command take (SaxonJS 2 has no
 * public call that compiles once and keeps the result: fn:transform
 * compiles again on every call, seconds for the official EN 16931 rules).
 * saxon-js is pinned to an exact version for this reason; a change of its
 * internals fails the worker's start, never a job.
 */
function compile(saxonJs: Saxon, path: string): SefNode {
  const platform = saxonJs.getPlatform();
  const stylesheet = platform.parseXmlFromString(readFileSync(path, 'utf8'));
  stylesheet._saxonBaseUri = pathToFileURL(path).href;
  const compiler = withParents(platform.resource('compiler'));
  const stylesheetParams = new saxonJs.XdmMap();
  stylesheetParams.inSituPut(saxonJs.XS.QName.fromParts('', '', 'staticParameters'), [new saxonJs.XdmMap()]);
  const options = saxonJs.checkOptions({
    stylesheetInternal: compiler,
    stylesheetParams,
    tunnelParams: {},
    functionParams: {},
    outputProperties: {},
    isDynamicStylesheet: true,
    destination: 'application',
    initialMode: 'compile-complete',
    templateParams: { 'Q{}options': { noXPath: false } },
  });
  saxonJs.internalTransform(compiler, stylesheet, options);
  return withParents(saxonJs.XPath.sefToJSON((first(options.principalResult) as XmlNode).firstChild, false));
}

/** Loads SaxonJS and compiles each stylesheet once; throws when one does not compile. */
async function loadRules(rules: RuleFile[]): Promise<void> {
  const saxonJs = (await import('saxon-js')).default as unknown as Saxon;
  compiled = rules.map((file) => ({ file, sef: compile(saxonJs, file.path) }));
  saxon = saxonJs;
}

/** The SVRL report of one compiled stylesheet on the XML. */
function transform(sef: SefNode, xml: string): unknown {
  const source = saxon!.getPlatform().parseXmlFromString(xml);
  const options = saxon!.checkOptions({
    stylesheetInternal: sef,
    stylesheetParams: new saxon!.XdmMap(),
    tunnelParams: {},
    functionParams: {},
    templateParams: {},
    outputProperties: {},
    isDynamicStylesheet: true,
    destination: 'application',
  });
  saxon!.internalTransform(sef, source, options);
  return first(options.principalResult);
}

interface SvrlElement {
  getAttribute(name: string): string | null;
  textContent: string | null;
}

/** Runs every stylesheet for `profile` on the XML (its UTF-8 bytes), and sorts their failed asserts. */
function checkRules(xml: Uint8Array, profile: EinvoiceProfile): RuleOutcome {
  const outcome: RuleOutcome = { errors: [], warnings: [] };
  const text = Buffer.from(xml.buffer, xml.byteOffset, xml.length).toString('utf8');
  for (const { sef } of compiled.filter((c) => c.file.profiles.includes(profile))) {
    const report = transform(sef, text);
    const asserts = saxon!.XPath.evaluate('//svrl:failed-assert', report, { namespaceContext: SVRL, resultForm: 'array' }) as SvrlElement[];
    for (const failed of asserts) {
      const flag = (failed.getAttribute('flag') ?? failed.getAttribute('role') ?? '').toLowerCase();
      const failure = { id: failed.getAttribute('id') ?? '', text: (failed.textContent ?? '').replace(/\s+/g, ' ').trim() };
      (flag === 'warning' || flag === 'information' ? outcome.warnings : outcome.errors).push(failure);
    }
  }
  return outcome;
}

/** Answers on the port, then wakes the worker, which waits for it (business-rules.ts). */
function answer(port: MessagePort, signal: Int32Array, message: RulesAnswer): void {
  port.postMessage(message);
  Atomics.store(signal, 0, ANSWERED);
  Atomics.notify(signal, 0);
}

async function main(): Promise<void> {
  const { rules, port, signal: shared } = workerData as RulesThreadData;
  const signal = new Int32Array(shared);
  try {
    await loadRules(rules);
  } catch (error) {
    return parentPort?.postMessage({ error: (error as Error).message } satisfies RulesAnswer);
  }
  port.on('message', ({ xml, profile }: RulesCheck) => {
    const bytes = new Uint8Array(xml);
    let message: RulesAnswer;
    try {
      message = { outcome: checkRules(bytes, profile) };
    } catch (error) {
      // SaxonJS's message may quote the XML: the worker is told that the check failed, not why.
      message = { error: `business rules failed (${(error as Error).name})` };
    } finally {
      bytes.fill(0);
    }
    answer(port, signal, message);
    // The worker goes on with the job meanwhile; a check that comes first waits for this.
    setImmediate(forgetAllStrings);
  });
  parentPort?.postMessage({ ready: true } satisfies RulesAnswer);
}

void main();
