/**
 * Lets an SVG asset use another asset: Typst 0.11 draws images inside an
 * SVG only from `data:` URLs, and ignores `href="logo.png"`. Before an SVG
 * is handed to the compiler, each `href` (or `xlink:href`) that names
 * another asset of the same request (relative to the SVG's folder, or from
 * the root with a leading `/`) is replaced by that asset as a `data:` URL.
 *
 * Works on the bytes, never on strings of them (see docs/retention.md, zero data
 * retention); hand-written because the only job is to find
 * attribute values, which needs no XML parser, and base64 is encoded into
 * a buffer the caller wipes.
 */
import { base64Length, encodeBase64Into } from '../bytes/base64.js';
import { hashOf } from '../bytes/asset-table.js';
import { MAX_ASSET_NAME } from '../bytes/asset-names.js';
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';
import { DOT, SLASH } from '../bytes/ascii.js';

/** Extensions (lower case) and the media type of their `data:` URL. */
const MEDIA_TYPES = new Map<string, string>([
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['jpeg', 'image/jpeg'],
  ['gif', 'image/gif'],
  ['svg', 'image/svg+xml'],
  ['webp', 'image/webp'],
]);
const HREF = Buffer.from('href=');

/** An asset as the linker sees it: its name's bytes (UTF-8) and its content. */
export interface LinkableAsset {
  name: Buffer;
  content: Buffer;
}

/**
 * A job's assets by name, looked up by the bytes of an href: no name, and
 * nothing of an SVG, becomes a string here. Through the asset table's hash
 * (a random table made at start), so no SVG can make many hrefs meet many
 * names.
 */
export class AssetsByName {
  private readonly byHash = new Map<number, LinkableAsset[]>();

  constructor(assets: readonly LinkableAsset[]) {
    for (const asset of assets) {
      if (asset.name.length > MAX_ASSET_NAME) continue;
      const hash = hashOf(asset.name, 0, asset.name.length);
      const same = this.byHash.get(hash);
      if (same) same.push(asset);
      else this.byHash.set(hash, [asset]);
    }
  }

  /** The asset named by `bytes[from, to)`, if any. */
  get(bytes: Buffer, from: number, to: number): LinkableAsset | undefined {
    if (to - from > MAX_ASSET_NAME) return undefined;
    return this.byHash
      .get(hashOf(bytes, from, to))
      ?.find((asset) => asset.name.length === to - from && bytes.compare(asset.name, 0, asset.name.length, from, to) === 0);
  }
}

const SVG_TYPE = MEDIA_TYPES.get('svg')!;

/** Whether the name ends in `.svg`, in any case. */
export function isSvgName(name: Buffer): boolean {
  return mediaTypeOf(name) === SVG_TYPE;
}

/** The media type of the name's extension (in any case), if MEDIA_TYPES has it. */
function mediaTypeOf(name: Buffer): string | undefined {
  const dot = name.lastIndexOf(DOT);
  if (dot < 0) return undefined;
  // Compared byte by byte: no part of a request's name becomes a string.
  for (const [extension, type] of MEDIA_TYPES) {
    if (name.length - dot - 1 !== extension.length) continue;
    let same = true;
    for (let i = 0; same && i < extension.length; i++) same = (name[dot + 1 + i]! | 0x20) === extension.charCodeAt(i);
    if (same) return type;
  }
  return undefined;
}

/**
 * Bytes an href that names an asset may hold: any a name may (printable
 * UTF-8, spaces, `/`), but not a quote, `=`, `<` or `>`, so that the scan
 * of one value never runs into the next attribute.
 */
const nameByte = (b: number) => b >= 0x20 && b !== 0x22 && b !== 0x27 && b !== 0x3d && b !== 0x3c && b !== 0x3e && b !== 0x5c && b !== 0x7f;

const dataUrlHead = (type: string) => Buffer.from(`data:${type};base64,`);
const dataUrlLength = (type: string, content: Buffer) => dataUrlHead(type).length + base64Length(content.length);

/** `data:<type>;base64,<content>` as bytes of a buffer of its own. */
function dataUrl(type: string, content: Buffer): Buffer {
  const head = dataUrlHead(type);
  const out = ownedBuffer(head.length + base64Length(content.length));
  encodeBase64Into(content, out, head.copy(out));
  return out;
}

/**
 * Bytes of `data:` URLs one job may add to its SVGs. Each href is replaced by
 * a copy of the asset it names, so an SVG that names one large asset many
 * times would otherwise grow as the product of the two; past this budget
 * hrefs are left as they are (Typst then draws nothing for them).
 */
export const INLINE_BUDGET_BYTES = 64 * 1024 * 1024;

/** What a job has left of INLINE_BUDGET_BYTES, shared by its SVGs. */
export interface InlineBudget {
  bytes: number;
}

/** Longest href compared with asset names: a name is at most 255 bytes, `./` and `../` may come before. */
const MAX_HREF = 300;

/**
 * Resolves hrefs against an SVG's folder into a scratch buffer, as
 * `a.png`, `./a.png`, `../img/a.png` and `/img/a.png` name assets: the
 * SVG's folders (none for a leading `/`), then each segment of the href,
 * `.` and empty ones skipped, `..` dropping the last folder (none left:
 * nothing). Segments are kept as ranges of the SVG's name or of the SVG.
 */
class HrefResolver {
  /** Per segment: 0 for the SVG's name, 1 for the SVG; its start; its end. */
  private readonly segments = new Int32Array(3 * (MAX_ASSET_NAME + MAX_HREF));
  private readonly scratch = Buffer.alloc(MAX_ASSET_NAME);
  private count = 0;
  /** Where the SVG's folder ends in its name (-1: none). */
  private readonly folderEnd: number;

  constructor(
    private readonly svgName: Buffer,
    private readonly svg: Buffer,
  ) {
    this.folderEnd = svgName.lastIndexOf(SLASH);
  }

  /** The asset `svg[start, end)` names, if any. */
  find(start: number, end: number, assets: AssetsByName): LinkableAsset | undefined {
    this.count = 0;
    if (this.svg[start] !== SLASH && this.folderEnd > 0) this.addSegments(0, this.svgName, 0, this.folderEnd);
    this.addSegments(1, this.svg, start, end);
    let length = this.count - 1;
    for (let k = 0; k < this.count; k++) length += this.segments[3 * k + 2]! - this.segments[3 * k + 1]!;
    if (this.count === 0 || length > MAX_ASSET_NAME) return undefined;
    let at = 0;
    for (let k = 0; k < this.count; k++) {
      if (k > 0) this.scratch[at++] = SLASH;
      const source = this.segments[3 * k] === 0 ? this.svgName : this.svg;
      at += source.copy(this.scratch, at, this.segments[3 * k + 1], this.segments[3 * k + 2]);
    }
    const found = assets.get(this.scratch, 0, at);
    this.scratch.fill(0, 0, at);
    return found;
  }

  /** The segments of `bytes[from, to)` (at most MAX_HREF bytes), applied in turn. */
  private addSegments(source: 0 | 1, bytes: Buffer, from: number, to: number): void {
    for (let segment = from; segment <= to; ) {
      let end = segment;
      while (end < to && bytes[end] !== SLASH) end++;
      const length = end - segment;
      if (length === 2 && bytes[segment] === DOT && bytes[segment + 1] === DOT) this.count = Math.max(this.count - 1, 0);
      else if (length > 0 && !(length === 1 && bytes[segment] === DOT)) {
        const k = 3 * this.count++;
        this.segments[k] = source;
        this.segments[k + 1] = segment;
        this.segments[k + 2] = end;
      }
      segment = end + 1;
    }
  }
}

/**
 * The SVG `svg` with the hrefs that name other assets made `data:` URLs;
 * its own content if there are none. An href is compared with the names
 * only when it could be one: short, and of the bytes names may hold (UTF-8
 * text, spaces included, as written). Linear in the SVG: the scan of an
 * href's value stops at the first byte a name cannot hold (an `=` among
 * them, so scans do not overlap), and each asset is encoded once however
 * often it is named.
 */
export function inlineLinkedAssets(svg: LinkableAsset, assets: AssetsByName, budget: InlineBudget): Buffer {
  const bytes = svg.content;
  const parts: Buffer[] = [];
  const urls = new Map<LinkableAsset, Buffer>();
  const resolver = new HrefResolver(svg.name, bytes);
  let copied = 0;
  for (let at = bytes.indexOf(HREF); at !== -1; at = bytes.indexOf(HREF, at + HREF.length)) {
    const quote = bytes[at + HREF.length];
    if (quote !== 0x22 && quote !== 0x27) continue;
    const start = at + HREF.length + 1;
    let end = start;
    while (end < bytes.length && end - start <= MAX_HREF && nameByte(bytes[end]!)) end++;
    if (bytes[end] !== quote || end - start > MAX_HREF) continue;
    const asset = resolver.find(start, end, assets);
    const type = asset && asset !== svg ? mediaTypeOf(asset.name) : undefined;
    if (!asset || !type) continue;
    let url = urls.get(asset);
    if (!url) {
      const length = dataUrlLength(type, asset.content);
      if (length > budget.bytes) continue;
      url = dataUrl(type, asset.content);
      urls.set(asset, url);
    }
    if (url.length > budget.bytes) continue;
    budget.bytes -= url.length;
    parts.push(bytes.subarray(copied, start), url);
    copied = end;
  }
  if (parts.length === 0) {
    for (const url of urls.values()) wipe(url);
    return bytes;
  }
  parts.push(bytes.subarray(copied));
  const out = ownedBuffer(parts.reduce((sum, part) => sum + part.length, 0));
  let o = 0;
  for (const part of parts) {
    part.copy(out, o);
    o += part.length;
  }
  for (const url of urls.values()) wipe(url);
  return out;
}
