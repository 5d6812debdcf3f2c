/**
 * Reads PDFs the way a test needs to: pages, text per page, embedded font
 * names, images drawn, outline and metadata, with pdf.js.
 */
import { getDocument, OPS } from 'pdfjs-dist/legacy/build/pdf.mjs';

export interface ParsedPdf {
  pages: number;
  /** Text of each page, items joined with spaces. */
  text: string[];
  /** Text of each page, one entry per text item, in reading order. */
  items: string[][];
  /** Each page's text items with where they start on the page (PDF units, origin bottom left). */
  placed: { text: string; x: number; y: number }[][];
  /** Base names of the embedded fonts, subset prefix removed (e.g. "Arimo-Bold"). */
  fonts: string[];
  /** Pixel size ("40x30") of each image drawn, on any page and inside forms (SVG), in drawing order. */
  images: string[];
  /** Form XObjects drawn (Typst draws each SVG image as one). */
  forms: number;
  outline: string[];
  creator: string | undefined;
}

export async function parsePdf(bytes: Uint8Array | ArrayBuffer): Promise<ParsedPdf> {
  const data = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : new Uint8Array(bytes);
  const doc = await getDocument({ data, verbosity: 0, useSystemFonts: false, disableFontFace: true }).promise;
  try {
    const text: string[] = [];
    const items: string[][] = [];
    const placed: ParsedPdf['placed'] = [];
    const fonts = new Set<string>();
    const images: string[] = [];
    let forms = 0;
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      const strings = content.items.map((item) => ('str' in item ? item.str : '')).filter((s) => s.length > 0);
      items.push(strings);
      placed.push(
        content.items.flatMap((item) =>
          'str' in item && item.str.length > 0 ? [{ text: item.str, x: item.transform[4] as number, y: item.transform[5] as number }] : [],
        ),
      );
      text.push(strings.join(' '));
      const ops = await page.getOperatorList();
      for (let i = 0; i < ops.fnArray.length; i++) {
        if (ops.fnArray[i] === OPS.paintFormXObjectBegin) forms++;
        if (ops.fnArray[i] === OPS.paintImageXObject) {
          const [, width, height] = ops.argsArray[i] as [string, number, number];
          images.push(`${width}x${height}`);
        }
        if (ops.fnArray[i] !== OPS.setFont) continue;
        const id = (ops.argsArray[i] as [string])[0];
        const font = page.commonObjs.has(id) ? (page.commonObjs.get(id) as { name?: string }) : undefined;
        if (font?.name) fonts.add(font.name.replace(/^[A-Z]{6}\+/, ''));
      }
    }
    const outline = ((await doc.getOutline()) ?? []).map((entry) => entry.title);
    const meta = (await doc.getMetadata()).info as { Creator?: string };
    return { pages: doc.numPages, text, items, placed, fonts: [...fonts], images, forms, outline, creator: meta.Creator };
  } finally {
    await doc.destroy();
  }
}
