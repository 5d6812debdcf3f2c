/**
 * The files a PDF carries (its EmbeddedFiles name tree), as the finishing
 * steps read them, and the one change made to every PDF that has them:
 * plain file names.
 *
 * A template names what it attaches (`pdf.attach("../../x.txt", ...)`), and
 * Typst embeds it under that name, path and all, so a reader's "save all"
 * (`pdfdetach -saveall`, a viewer's) would write outside the folder it was
 * given. plainAttachmentNames renames each such attachment to its last
 * path segment, in an incremental update (incremental-update.ts) with new
 * versions of its file specification and of the object that holds the
 * name tree; a PDF whose attachments all have plain names is not touched.
 */
import { randomInt } from 'node:crypto';
import { wipe } from '../retention/wipe.js';
import { appendUpdate, type NewObject, valueObject } from './incremental-update.js';
import { PdfObjects } from './pdf-objects.js';
import { asDict, type PdfDict, PdfRef, PdfString, type PdfValue } from './pdf-values.js';

/** One entry of a name tree: its key (a PDF text string's bytes) and the file specification it names. */
export interface Attachment {
  key: Buffer;
  spec: PdfValue;
}

/** Every entry of a name tree (its /Names, and its /Kids' down to the leaves), each node read once. */
export function nameTreeEntries(objects: PdfObjects, root: PdfValue | undefined): Attachment[] {
  const entries: Attachment[] = [];
  const seen = new Set<number>();
  const walk = (node: PdfValue | undefined, depth: number) => {
    if (node instanceof PdfRef) {
      if (seen.has(node.num)) return;
      seen.add(node.num);
    }
    const dict = asDict(objects.follow(node));
    if (!dict || depth > 32) return;
    const names = objects.follow(dict.get('Names'));
    if (Array.isArray(names)) {
      for (let i = 0; i + 1 < names.length; i += 2) {
        const key = names[i];
        if (key instanceof PdfString) entries.push({ key: key.bytes, spec: names[i + 1]! });
      }
    }
    const kids = objects.follow(dict.get('Kids'));
    if (Array.isArray(kids)) for (const kid of kids) walk(kid, depth + 1);
  };
  walk(root, 0);
  return entries;
}

/** The attachment's embedded file stream, if the PDF has it. */
export function embeddedFile(objects: PdfObjects, spec: PdfValue): PdfRef | undefined {
  const ef = asDict(objects.follow(asDict(objects.follow(spec))?.get('EF')));
  const stream = ef?.get('UF') ?? ef?.get('F');
  return stream instanceof PdfRef && objects.has(stream.num) ? stream : undefined;
}

const UTF16_MARK = Buffer.from([0xfe, 0xff]);
/** The name an attachment gets when its last segment is empty, `.` or `..`. */
const FALLBACK_NAME = 'attachment';

/**
 * The length of the bidirectional control at `at`, or 0: Unicode's ALM,
 * LRM, RLM, embeddings, overrides and isolates, a name with which shows
 * other than it is (`a<RLO>txt.exe` as `aexe.txt`). A UTF-16BE unit, or in
 * a one-byte string the control's UTF-8 bytes: Typst writes names there as
 * UTF-8, which readers take as such.
 */
function bidiControlAt(key: Buffer, at: number, wide: boolean): number {
  if (wide) {
    if (at + 2 > key.length) return 0;
    const code = key.readUInt16BE(at);
    return code === 0x061c || code === 0x200e || code === 0x200f || (code >= 0x202a && code <= 0x202e) || (code >= 0x2066 && code <= 0x2069)
      ? 2
      : 0;
  }
  const [a, b, c = 0] = [key[at], key[at + 1], key[at + 2]];
  if (a === 0xd8 && b === 0x9c) return 2;
  if (a !== 0xe2) return 0;
  if (b === 0x80 && (c === 0x8e || c === 0x8f || (c >= 0xaa && c <= 0xae))) return 3;
  return b === 0x81 && c >= 0xa6 && c <= 0xa9 ? 3 : 0;
}

/**
 * A PDF text string's last path segment (after `/` or `\`), less its
 * bidirectional controls, in the same encoding: UTF-16BE after its mark,
 * or a one-byte encoding (PDFDocEncoding and UTF-8 write both separators as
 * in ASCII, and no byte of a longer UTF-8 character is one). Undefined when
 * it is plain already.
 */
export function plainName(key: Buffer): Buffer | undefined {
  const wide = key.length >= 2 && key[0] === 0xfe && key[1] === 0xff;
  const unit = wide ? 2 : 1;
  const first = wide ? 2 : 0;
  let segment = first;
  let controls = false;
  for (let i = first; i + unit <= key.length; i += unit) {
    const code = wide ? key.readUInt16BE(i) : key[i]!;
    if (code === 0x2f || code === 0x5c) segment = i + unit;
    else if (bidiControlAt(key, i, wide) > 0) controls = true;
  }
  const last = controls ? withoutBidiControls(key.subarray(segment), wide) : key.subarray(segment);
  const dots = last.length > 0 && last.length <= 2 * unit && last.every((b, i) => (wide && i % 2 === 0 ? b === 0 : b === 0x2e));
  if (segment === first && !controls && !dots && last.length > 0) return undefined;
  if (last.length === 0 || dots)
    return wide ? Buffer.concat([UTF16_MARK, Buffer.from(FALLBACK_NAME, 'utf16le').swap16()]) : Buffer.from(FALLBACK_NAME);
  return wide ? Buffer.concat([UTF16_MARK, last]) : Buffer.from(last);
}

/** `bytes` without the bidirectional controls among them (a buffer of its own). */
function withoutBidiControls(bytes: Buffer, wide: boolean): Buffer {
  const kept = Buffer.alloc(bytes.length);
  let length = 0;
  for (let i = 0; i < bytes.length; ) {
    const control = bidiControlAt(bytes, i, wide);
    if (control > 0) {
      i += control;
      continue;
    }
    const step = Math.min(wide ? 2 : 1, bytes.length - i);
    bytes.copy(kept, length, i, i + step);
    length += step;
    i += step;
  }
  return kept.subarray(0, length);
}

/** `key` made unique among `taken` by a number before its end: `x.txt`, `x.txt-2` (PDFDocEncoding or UTF-16BE). */
function unique(key: Buffer, taken: ByteSet, made: Buffer[]): Buffer {
  const wide = key.length >= 2 && key[0] === 0xfe && key[1] === 0xff;
  let candidate = key;
  for (let n = 2; taken.has(candidate); n++) {
    const suffix = wide ? Buffer.from(`-${n}`, 'utf16le').swap16() : Buffer.from(`-${n}`);
    candidate = Buffer.concat([key, suffix]);
    made.push(candidate);
  }
  taken.add(candidate);
  return candidate;
}

/**
 * A set of names compared as bytes. Names are request content, and a
 * JavaScript string of one (a Set's key) could not be wiped; the hash is
 * seeded per process, so names chosen to collide cannot be prepared.
 */
class ByteSet {
  private static readonly seed = randomInt(2 ** 31);
  private readonly buckets = new Map<number, Buffer[]>();

  private static hash(bytes: Uint8Array): number {
    let h = ByteSet.seed ^ 0x811c9dc5;
    for (const b of bytes) h = Math.imul(h ^ b, 0x01000193);
    return h >>> 0;
  }

  has(bytes: Buffer): boolean {
    return this.buckets.get(ByteSet.hash(bytes))?.some((b) => b.equals(bytes)) ?? false;
  }

  add(bytes: Buffer): void {
    const h = ByteSet.hash(bytes);
    const bucket = this.buckets.get(h);
    if (bucket) bucket.push(bytes);
    else this.buckets.set(h, [bytes]);
  }
}

/** What plainAttachmentNames made of a PDF. */
export interface PlainNames {
  /** The PDF with every attachment under its plain file name (a buffer of its own), or undefined when none needed renaming. */
  pdf?: Buffer;
  /**
   * The object number of the file specification that was named as one of
   * `named` before any renaming: an e-invoice's XML is found by the name the
   * template gave it (`a/b/inv.xml`), which renaming changes (`inv.xml`).
   */
  namedSpec?: number;
}

/**
 * Every attachment under its plain file name (the caller wipes `pdf`,
 * and the new PDF, if one is made). A name tree nested in /Kids is written
 * back flat.
 */
export function plainAttachmentNames(pdf: Buffer, named: Buffer[] = []): PlainNames {
  // Typst writes its objects uncompressed: a PDF without this word has no attachments.
  if (!pdf.includes('/EmbeddedFiles')) return {};
  const objects = new PdfObjects(pdf);
  try {
    return rename(objects, named);
  } finally {
    // The names read (request content: the template gave them).
    objects.wipe();
  }
}

function rename(objects: PdfObjects, named: Buffer[]): PlainNames {
  const root = objects.root();
  const catalog = asDict(objects.read(objects.value(root)));
  const names = asDict(objects.follow(catalog?.get('Names')));
  if (!catalog || !names) return {};
  const attachments = nameTreeEntries(objects, names.get('EmbeddedFiles'));
  const spec = attachments.find((a) => named.some((form) => form.equals(a.key)))?.spec;
  const namedSpec = spec instanceof PdfRef ? spec.num : undefined;
  const renamed = attachments.map((a) => ({ ...a, plain: plainName(a.key) }));
  if (renamed.every((a) => a.plain === undefined)) return { namedSpec };

  // The names made here (request content: the template gave them), wiped once the update is written.
  const made = renamed.flatMap((a) => (a.plain === undefined ? [] : [a.plain]));
  try {
    return { pdf: renameAll(objects, { root, catalog, names }, renamed, made), namedSpec };
  } finally {
    for (const name of made) wipe(name);
  }
}

/** The update: each renamed specification, and the catalog with the name tree written flat. */
function renameAll(
  objects: PdfObjects,
  { root, catalog, names }: { root: { num: number }; catalog: PdfDict; names: PdfDict },
  renamed: (Attachment & { plain: Buffer | undefined })[],
  made: Buffer[],
): Buffer {
  const updated: NewObject[] = [];
  const taken = new ByteSet();
  for (const a of renamed) if (a.plain === undefined) taken.add(a.key);
  const entries: Attachment[] = [];
  for (const attachment of renamed) {
    if (attachment.plain === undefined) {
      entries.push(attachment);
      continue;
    }
    const key = unique(attachment.plain, taken, made);
    entries.push({ key, spec: attachment.spec });
    // The file specification names the file twice (/F, /UF): both become the plain name.
    if (!(attachment.spec instanceof PdfRef)) continue;
    const spec = asDict(objects.follow(attachment.spec));
    if (!spec) continue;
    const renamedSpec: PdfDict = new Map(spec);
    renamedSpec.set('F', new PdfString(key));
    renamedSpec.set('UF', new PdfString(key));
    updated.push(valueObject(attachment.spec.num, renamedSpec));
  }
  entries.sort((a, b) => Buffer.compare(a.key, b.key));
  const newNames: PdfDict = new Map(names);
  newNames.set('EmbeddedFiles', new Map([['Names', entries.flatMap((e) => [new PdfString(e.key), e.spec])]]));
  const newCatalog: PdfDict = new Map(catalog);
  newCatalog.set('Names', newNames);
  updated.push(valueObject(root.num, newCatalog));
  return appendUpdate(objects, updated).pdf;
}
