/**
 * Whether an e-invoice's XML is UTF-8 as far as its start says, read as
 * bytes (the XML is request content: it never becomes a JavaScript string).
 *
 * The check for a DOCTYPE (xml-schema.ts) looks for its ASCII bytes, so it
 * sees what the parser reads only if the parser reads the bytes as UTF-8: a
 * UTF-16 XML once carried a DTD past it. The parser is now told to read
 * UTF-8 whatever the XML says, and an XML that says otherwise is refused
 * first, with this as the reason: a byte order mark of UTF-16 or UTF-32, a
 * NUL among the first four bytes (how a parser recognizes those encodings
 * without one), or an XML declaration naming another encoding.
 */
import { APOSTROPHE, EQUALS, isXmlSpace, QUOTE } from '../bytes/ascii.js';

const UTF8_BOM = [0xef, 0xbb, 0xbf];
const XML_DECLARATION = [...Buffer.from('<?xml')];
const DECLARATION_END = Buffer.from('?>');
const VERSION = Buffer.from('version');
const ENCODING = Buffer.from('encoding');
/** UTF-8's names, lower case, as an XML declaration may give them. */
const UTF8_NAMES = [Buffer.from('utf-8'), Buffer.from('utf8')];

const lower = (byte: number) => (byte >= 0x41 && byte <= 0x5a ? byte + 0x20 : byte);

function startsWith(bytes: Uint8Array, at: number, prefix: readonly number[]): boolean {
  return prefix.every((byte, i) => bytes[at + i] === byte);
}

/** Whether the first four bytes hold a UTF-16 or UTF-32 byte order mark, or a NUL. */
function startsWide(xml: Uint8Array): boolean {
  if (startsWith(xml, 0, [0xfe, 0xff]) || startsWith(xml, 0, [0xff, 0xfe])) return true;
  for (let i = 0; i < Math.min(4, xml.length); i++) if (xml[i] === 0) return true;
  return false;
}

/** A pseudo-attribute of the XML declaration: ` name = "value"`, its name and value as [start, end), and where it ends. */
interface Pair {
  name: [number, number];
  value: [number, number];
  next: number;
}

/** The pseudo-attribute at `at` (white space first, as the grammar wants), or undefined if there is none. */
function readPair(xml: Buffer, at: number, end: number): Pair | undefined {
  if (!isXmlSpace(xml[at])) return undefined;
  while (at < end && isXmlSpace(xml[at])) at++;
  const nameStart = at;
  while (at < end && xml[at] !== EQUALS && !isXmlSpace(xml[at])) at++;
  const nameEnd = at;
  while (at < end && isXmlSpace(xml[at])) at++;
  if (nameEnd === nameStart || xml[at] !== EQUALS) return undefined;
  at++;
  while (at < end && isXmlSpace(xml[at])) at++;
  const quote = xml[at];
  if (quote !== QUOTE && quote !== APOSTROPHE) return undefined;
  const close = xml.subarray(0, end).indexOf(quote, at + 1);
  if (close < 0) return undefined;
  return { name: [nameStart, nameEnd], value: [at + 1, close], next: close + 1 };
}

const named = (xml: Buffer, [start, end]: [number, number], name: Buffer) => xml.subarray(start, end).equals(name);

/**
 * The encoding's name in the XML declaration, as [start, end) of `xml`, or
 * undefined when there is no declaration or it names none. The declaration
 * is `<?xml`, `version`, then `encoding` if it names one (XML 1.0, XMLDecl);
 * one this does not read is left to the parser, which refuses it.
 */
function declaredEncoding(xml: Buffer): [number, number] | undefined {
  const start = startsWith(xml, 0, UTF8_BOM) ? UTF8_BOM.length : 0;
  if (!startsWith(xml, start, XML_DECLARATION)) return undefined;
  const end = xml.indexOf(DECLARATION_END, start);
  if (end < 0) return undefined;
  const version = readPair(xml, start + XML_DECLARATION.length, end);
  if (!version || !named(xml, version.name, VERSION)) return undefined;
  const encoding = readPair(xml, version.next, end);
  return encoding && named(xml, encoding.name, ENCODING) ? encoding.value : undefined;
}

/** Whether the XML is UTF-8 as far as its start says (see above). Linear in its size. */
export function isUtf8Xml(xml: Uint8Array): boolean {
  if (startsWide(xml)) return false;
  const bytes = Buffer.from(xml.buffer, xml.byteOffset, xml.length);
  const range = declaredEncoding(bytes);
  if (!range) return true;
  const [from, to] = range;
  return UTF8_NAMES.some((name) => name.length === to - from && name.every((byte, i) => lower(bytes[from + i]!) === byte));
}
