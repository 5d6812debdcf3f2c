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
import { ownedBuffer } from '../retention/owned-buffer.js';
import { wipe } from '../retention/wipe.js';

const MEDIA_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  webp: 'image/webp',
};
const HREF = Buffer.from('href=');

export const isSvg = (name: string) => /\.svg$/i.test(name);

/**
 * Bytes an href that names an asset may hold: any a name may (printable
 * UTF-8, spaces, `/`), but not a quote, `=`, `<` or `>`, so that the scan
 * of one value never runs into the next attribute.
 */
const nameByte = (b: number) => b >= 0x20 && b !== 0x22 && b !== 0x27 && b !== 0x3d && b !== 0x3c && b !== 0x3e && b !== 0x5c && b !== 0x7f;

function mediaType(name: string): string | undefined {
  return MEDIA_TYPES[/\.([a-z]+)$/i.exec(name)?.[1]?.toLowerCase() ?? ''];
}

const dataUrlHead = (type: string) => Buffer.from(`data:${type};base64,`);
const dataUrlLength = (type: string, content: Buffer) => dataUrlHead(type).length + base64Length(content.length);

/** `data:<type>;base64,<content>` as bytes of a buffer of its own. */
function dataUrl(type: string, content: Buffer): Buffer {
  const head = dataUrlHead(type);
  const out = ownedBuffer(head.length + base64Length(content.length));
  encodeBase64Into(content, out, head.copy(out));
  return out;
}

/** The asset an href in the SVG `svgName` names, if any: `a.png`, `./a.png`, `../img/a.png`, `/img/a.png`. */
function resolve(svgName: string, href: string): string {
  const base = href.startsWith('/') ? [] : svgName.split('/').slice(0, -1);
  for (const segment of href.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') base.pop();
    else base.push(segment);
  }
  return base.join('/');
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
 * The SVG `svg` (asset `svgName`) with the hrefs that name other assets made
 * `data:` URLs; the same buffer if there are none. An href is compared
 * with the names only when it could be one: short, and of the bytes names
 * may hold (UTF-8 text, spaces included, as written). Linear in the
 * SVG: the scan of an href's value stops at the first byte a name cannot
 * hold (an `=` among them, so scans do not overlap), and each asset is
 * encoded once however often it is named.
 */
export function inlineLinkedAssets(svgName: string, svg: Buffer, assets: ReadonlyMap<string, Buffer>, budget: InlineBudget): Buffer {
  const parts: Buffer[] = [];
  const urls = new Map<string, Buffer>();
  let copied = 0;
  for (let at = svg.indexOf(HREF); at !== -1; at = svg.indexOf(HREF, at + HREF.length)) {
    const quote = svg[at + HREF.length];
    if (quote !== 0x22 && quote !== 0x27) continue;
    const start = at + HREF.length + 1;
    let end = start;
    while (end < svg.length && end - start <= MAX_HREF && nameByte(svg[end]!)) end++;
    if (svg[end] !== quote || end - start > MAX_HREF) continue;
    const name = resolve(svgName, svg.toString('utf8', start, end));
    const content = assets.get(name);
    const type = mediaType(name);
    if (!content || !type || name === svgName) continue;
    let url = urls.get(name);
    if (!url) {
      const length = dataUrlLength(type, content);
      if (length > budget.bytes) continue;
      url = dataUrl(type, content);
      urls.set(name, url);
    }
    if (url.length > budget.bytes) continue;
    budget.bytes -= url.length;
    parts.push(svg.subarray(copied, start), url);
    copied = end;
  }
  if (parts.length === 0) {
    for (const url of urls.values()) wipe(url);
    return svg;
  }
  parts.push(svg.subarray(copied));
  const out = ownedBuffer(parts.reduce((sum, part) => sum + part.length, 0));
  let o = 0;
  for (const part of parts) {
    part.copy(out, o);
    o += part.length;
  }
  for (const url of urls.values()) wipe(url);
  return out;
}
