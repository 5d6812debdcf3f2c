/**
 * Checks an e-invoice's XML in the worker: well-formed, the profile its
 * `GuidelineSpecifiedDocumentContextParameter/ID` declares, and valid
 * against the Factur-X XSD of its profile (schemas/factur-x/).
 *
 * libxml2 (libxml2-wasm, a WebAssembly build) does the parsing and the
 * validation. It is loaded, and the XSDs are parsed, by the worker's first
 * e-invoice (about 100 ms once), so a worker that makes none holds none of it.
 * The XSDs' own imports are read from schemas/factur-x/ only: no other
 * file and no network is reachable, whatever the XML names.
 *
 * libxml2's heap is WebAssembly memory, which keeps what it freed (the
 * XML, its text) as it was. Once the job's answer is on its way
 * (forgetCheckedXml, at the job's end), the memory is set back to the copy
 * taken once the XSDs were parsed: every page that changed is copied back
 * (or zeroed, past the copy), so nothing of the invoice is left in it (see
 * restoreMemory). Not before: the copy-back costs a fifth of the finishing
 * (0.17 to 0.27 ms), which the answer need not wait for.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type EinvoiceProfile, EINVOICE_PROFILES } from '../api-values.js';
import { guidelineTest, PROFILE_RULES } from './facturx.js';
import { isUtf8Xml } from './xml-encoding.js';

type LibXml2 = typeof import('libxml2-wasm');
type Validator = InstanceType<LibXml2['XsdValidator']>;
type XPath = InstanceType<LibXml2['XmlXPath']>;

/** schemas/factur-x/ of the installed service (dist/src/finish/ -> ../../../schemas). */
const SCHEMA_DIR = fileURLToPath(new URL('../../../schemas/factur-x/', import.meta.url));

const NAMESPACES = {
  rsm: 'urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100',
  ram: 'urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100',
};
const GUIDELINE = '/rsm:CrossIndustryInvoice/rsm:ExchangedDocumentContext/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID';
/** The bit of DECLARED_PROFILES that says the XML declares an identifier at all, known or not. */
const DECLARES_AN_ID = 2 ** EINVOICE_PROFILES.length;
/**
 * Every profile's test in one expression, a number whose bit i says whether
 * the XML declares EINVOICE_PROFILES[i]: one evaluation per XML instead of
 * one compile and evaluation per profile, and the identifier stays inside
 * the XML library.
 */
const DECLARED_PROFILES = [
  ...EINVOICE_PROFILES.map((p, i) => `number(${guidelineTest(p, GUIDELINE)}) * ${2 ** i}`),
  `number(string-length(normalize-space(${GUIDELINE})) > 0) * ${DECLARES_AN_ID}`,
].join(' + ');

/** Why the XML was refused: not UTF-8, a parse or schema error at a line, or a profile the XML does not declare or no one knows. */
export type XmlRefusal =
  | { kind: 'malformed'; line: number; message: string }
  | { kind: 'doctype'; line: number }
  | { kind: 'schema'; profile: EinvoiceProfile; line: number; message: string }
  | { kind: 'encoding' }
  | { kind: 'no-profile' }
  /** The XML declares an identifier that is none of the profiles'. */
  | { kind: 'unknown-profile' }
  | { kind: 'profile-mismatch'; requested: EinvoiceProfile; declared: EinvoiceProfile };

export type XmlCheck = { ok: true; profile: EinvoiceProfile } | { ok: false; refusal: XmlRefusal };

interface Loaded {
  lib: LibXml2;
  memory: WebAssembly.Memory;
  /** libxml2's own allocator (the module's `malloc` export). */
  malloc: (bytes: number) => number;
  validators: Map<string, Validator>;
  /** Which profiles the XML declares (see DECLARED_PROFILES), compiled with the XSDs. */
  declared: XPath | undefined;
  /** The memory once the XSDs were loaded. */
  snapshot: Snapshot | undefined;
  /** A check has run since the memory was last set back to the snapshot. */
  checked: boolean;
}

/**
 * libxml2's memory once the XSDs were parsed, in two parts around a block
 * of it that is allocated then and never used (see reserveUnused): `low`
 * from the start of the memory to the block, `high` from its end on. Each
 * copy leaves out the zero pages at its end.
 */
interface Snapshot {
  low: Buffer;
  /** The pages between `lowEnd` and `highStart` belong to the reserved block: no one writes them. */
  lowEnd: number;
  highStart: number;
  high: Buffer;
}

/*
 * The worker's cache of libxml2 and the parsed XSDs, set once by its first
 * e-invoice and only read after that. It holds no request content: the
 * snapshot is taken before any XML is read, and the memory is set back to it
 * after each job that checked one (forgetCheckedXml), so it stays module state rather than an
 * instance the worker would hand to every job.
 */
let loaded: Loaded | undefined;

/**
 * Loads libxml2 and finds its WebAssembly memory: the library does not
 * export it, so the instance it makes is seen once, through
 * `WebAssembly.instantiate`, while it loads.
 */
async function load(): Promise<Loaded> {
  const instantiate = WebAssembly.instantiate;
  let memory: WebAssembly.Memory | undefined;
  let malloc: unknown;
  const spy = async (...args: Parameters<typeof WebAssembly.instantiate>) => {
    const result = await (instantiate as (...a: unknown[]) => Promise<unknown>).apply(WebAssembly, args);
    const instance = (result as { instance?: WebAssembly.Instance }).instance ?? (result as WebAssembly.Instance);
    for (const value of Object.values(instance.exports)) if (value instanceof WebAssembly.Memory) memory = value;
    malloc = instance.exports.malloc;
    return result;
  };
  (WebAssembly as { instantiate: unknown }).instantiate = spy;
  let lib: LibXml2;
  try {
    lib = await import('libxml2-wasm');
  } finally {
    (WebAssembly as { instantiate: unknown }).instantiate = instantiate;
  }
  if (!memory) throw new Error('libxml2 loaded without a WebAssembly memory');
  if (typeof malloc !== 'function') throw new Error('libxml2 loaded without its malloc');
  const files = new Map<number, { bytes: Buffer; at: number }>();
  let next = 1;
  lib.xmlRegisterInputProvider({
    match: (name) => name.startsWith(SCHEMA_DIR) && /^[A-Za-z0-9._-]+\.xsd$/.test(name.slice(SCHEMA_DIR.length)),
    open: (name) => {
      files.set(next, { bytes: readFileSync(name), at: 0 });
      return next++;
    },
    read: (fd, buffer) => {
      const file = files.get(fd);
      if (!file) return -1;
      const n = Math.min(buffer.byteLength, file.bytes.length - file.at);
      buffer.set(file.bytes.subarray(file.at, file.at + n));
      file.at += n;
      return n;
    },
    close: (fd) => files.delete(fd),
  });
  return {
    lib,
    memory,
    malloc: malloc as Loaded['malloc'],
    validators: new Map(),
    declared: undefined,
    snapshot: undefined,
    checked: false,
  };
}

/** Loads libxml2, once per worker (by its first e-invoice: about 50 ms). */
export async function loadSchemas(): Promise<void> {
  loaded ??= await load();
}

export const schemasLoaded = () => loaded !== undefined;

/** Page size of the copy-back: WebAssembly's own page. */
const PAGE = 64 * 1024;
const ZERO_PAGE = Buffer.alloc(PAGE);

/**
 * What libxml2 keeps free for the checks after the XSDs are parsed: freed
 * memory below the reserved block, and this much past it. A check that
 * needs more grows the memory (by a fifth), and the new pages are compared
 * like the rest from then on. The check of an 8 KiB invoice changes 11
 * pages (0.7 MiB) in all, one of 300 KB of XML grows nothing. Every page of
 * it is compared after every check, most of them still zero: 38 pages with
 * this much, 54 with 2 MiB (the e-invoice example's finishing in a worker:
 * 0.04 and 0.27 ms less a document, paired), 30 with 512 KiB, which a
 * 200 KB XML outgrows (83 pages after it).
 */
const HEADROOM_BYTES = 1024 * 1024;

/** Parses every profile's XSD (once), reserves what no check will need, and copies the rest of the memory. */
function parseSchemas(state: Loaded): void {
  if (state.snapshot) return;
  for (const profile of EINVOICE_PROFILES) {
    const file = PROFILE_RULES[profile].xsd;
    if (state.validators.has(file)) continue;
    const path = SCHEMA_DIR + file;
    const doc = state.lib.XmlDocument.fromBuffer(readFileSync(path), { url: path });
    try {
      state.validators.set(file, state.lib.XsdValidator.fromDoc(doc));
    } finally {
      doc.dispose();
    }
  }
  // Compiled before the copy is taken, so that setting the memory back keeps it.
  state.declared ??= state.lib.XmlXPath.compile(DECLARED_PROFILES, NAMESPACES);
  const [lowEnd, highStart] = reserveUnused(state);
  const memory = Buffer.from(state.memory.buffer);
  state.snapshot = {
    low: Buffer.from(memory.subarray(0, usedEnd(memory, 0, lowEnd))),
    lowEnd,
    highStart,
    high: Buffer.from(memory.subarray(highStart, usedEnd(memory, highStart, memory.length))),
  };
}

/** The end of the last page in [start, end) that is not all zero, or `start` (both page-aligned). */
function usedEnd(memory: Buffer, start: number, end: number): number {
  let top = end;
  while (top > start && memory.compare(ZERO_PAGE, 0, PAGE, top - PAGE, top) === 0) top -= PAGE;
  return top;
}

/**
 * libxml2's memory starts at 16 MiB, of which the XSDs use about 1 MiB.
 * Comparing the pages no check ever touched took most of each check's time
 * (0.48 of 0.67 ms; a check takes 0.35 ms without it). So they are
 * allocated, once, as one block that is never written: the allocator hands
 * out no part of a block in use, and the block is in the copy, so setting
 * the memory back keeps it allocated. Only its whole pages are left out of
 * the compare, less one at each end, whatever the allocator keeps next to
 * a block. Returns those pages as [start, end) (an empty range when the
 * memory has no room to spare).
 */
function reserveUnused(state: Loaded): [number, number] {
  const memory = Buffer.from(state.memory.buffer);
  const free = memory.length - usedEnd(memory, 0, memory.length) - HEADROOM_BYTES;
  const at = free > 4 * PAGE ? state.malloc(free) >>> 0 : 0;
  const start = (Math.ceil(at / PAGE) + 1) * PAGE;
  const end = (Math.floor((at + free) / PAGE) - 1) * PAGE;
  return at !== 0 && end > start ? [start, end] : [memory.length, memory.length];
}

/**
 * Sets libxml2's memory back to the snapshot: pages that differ are copied
 * back, pages past each copy that are no longer zero are zeroed, and the
 * reserved block's pages are left as they are (nothing writes them).
 * Comparing first leaves untouched pages untouched (they stay the kernel's
 * shared zero page).
 */
function restoreMemory(state: Loaded): void {
  const memory = Buffer.from(state.memory.buffer);
  const { low, lowEnd, highStart, high } = state.snapshot!;
  restoreRange(memory, low, 0, lowEnd);
  restoreRange(memory, high, highStart, memory.length);
}

/** Sets the pages of memory[start, end) back to `copy` (which starts at `start`), and to zero past the copy's end. */
function restoreRange(memory: Buffer, copy: Buffer, start: number, end: number): void {
  for (let at = start; at < end; at += PAGE) {
    const offset = at - start;
    if (offset < copy.length) {
      if (memory.compare(copy, offset, offset + PAGE, at, at + PAGE) !== 0) memory.set(copy.subarray(offset, offset + PAGE), at);
    } else if (memory.compare(ZERO_PAGE, 0, PAGE, at, at + PAGE) !== 0) {
      memory.fill(0, at, at + PAGE);
    }
  }
}

const firstLine = (text: string) => text.split('\n')[0]!.trim();

/** The 1-based line of byte `at`. */
function lineAt(bytes: Uint8Array, at: number): number {
  let line = 1;
  for (let i = 0; i < at; i++) if (bytes[i] === 0x0a) line++;
  return line;
}

/**
 * Sets libxml2's memory back to the snapshot if a check ran since it last
 * was: at the end of every job (render/job-run.ts), once its answer is
 * written.
 */
export function forgetCheckedXml(): void {
  if (!loaded?.checked) return;
  restoreMemory(loaded);
  loaded.checked = false;
}

/**
 * Checks `xml` (its bytes as embedded) against the request's profile, or
 * the one it declares when the request names none. `loadSchemas` must have
 * run. libxml2's memory holds the XML until forgetCheckedXml.
 */
export function checkXml(xml: Uint8Array, requested: EinvoiceProfile | undefined): XmlCheck {
  const state = loaded;
  if (!state) throw new Error('checkXml before loadSchemas');
  parseSchemas(state);
  // A job's end sets the memory back; should one check follow another without it, the first's XML goes now.
  forgetCheckedXml();
  // Read as UTF-8 below, whatever it declares, so that the DOCTYPE's bytes are what the parser would read (xml-encoding.ts).
  if (!isUtf8Xml(xml)) return { ok: false, refusal: { kind: 'encoding' } };
  // No CII invoice has a DTD: refused before any parser sees one (no entity expansion, no external entity, in either engine).
  const doctype = Buffer.from(xml.buffer, xml.byteOffset, xml.length).indexOf('<!DOCTYPE');
  if (doctype >= 0) return { ok: false, refusal: { kind: 'doctype', line: lineAt(xml, doctype) } };
  const { lib } = state;
  try {
    let doc: InstanceType<LibXml2['XmlDocument']>;
    try {
      // No entity substitution, no DTD loading: the library's defaults, and no network or external entity on top.
      doc = lib.XmlDocument.fromBuffer(xml, {
        url: 'invoice.xml',
        encoding: 'UTF-8',
        option: lib.ParseOption.XML_PARSE_NONET | lib.ParseOption.XML_PARSE_NO_XXE,
      });
    } catch (error) {
      const detail = (error as { details?: { line: number; message: string }[] }).details?.[0];
      return {
        ok: false,
        refusal: { kind: 'malformed', line: detail?.line ?? 0, message: firstLine(detail?.message ?? (error as Error).message) },
      };
    }
    try {
      const bits = doc.eval(state.declared!) as number;
      const declared = EINVOICE_PROFILES.find((_, i) => Math.floor(bits / 2 ** i) % 2 === 1);
      if (!declared && bits >= DECLARES_AN_ID) return { ok: false, refusal: { kind: 'unknown-profile' } };
      if (requested && declared && requested !== declared) return { ok: false, refusal: { kind: 'profile-mismatch', requested, declared } };
      const profile = requested ?? declared;
      if (!profile) return { ok: false, refusal: { kind: 'no-profile' } };
      try {
        state.validators.get(PROFILE_RULES[profile].xsd)!.validate(doc);
      } catch (error) {
        const detail = (error as { details?: { line: number; message: string }[] }).details?.[0];
        if (!detail) throw error;
        return { ok: false, refusal: { kind: 'schema', profile, line: detail.line, message: firstLine(detail.message) } };
      }
      return { ok: true, profile };
    } finally {
      doc.dispose();
    }
  } finally {
    state.checked = true;
  }
}
