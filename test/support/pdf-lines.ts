/**
 * The size of each PDF page and its text lines with their vertical positions, for checks
 * that depend on layout (line breaks, paragraph spacing), with pdf.js.
 */
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';

export interface PdfLine {
  /** Distance from the top of the page, in points. */
  top: number;
  /** Size of the text, in points. */
  size: number;
  /** Text of the line, items joined with single spaces. */
  text: string;
}

export interface PdfPageLayout {
  /** Page size in points (A4: 595 × 842, US Letter: 612 × 792). */
  width: number;
  height: number;
  lines: PdfLine[];
}

export async function pdfLayout(bytes: Uint8Array): Promise<PdfPageLayout[]> {
  const doc = await getDocument({ data: new Uint8Array(bytes), verbosity: 0, useSystemFonts: false, disableFontFace: true }).promise;
  try {
    const pages: PdfPageLayout[] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      const width = page.view[2]! - page.view[0]!;
      const height = page.view[3]! - page.view[1]!;
      const content = await page.getTextContent();
      const lines = new Map<number, PdfLine>();
      for (const item of content.items) {
        if (!('str' in item) || item.str.trim() === '') continue;
        // transform = [a, b, c, d, x, y]: y is the baseline from the bottom.
        const top = Math.round((height - item.transform[5]) * 10) / 10;
        const line = lines.get(top);
        if (line) line.text += ` ${item.str}`;
        else lines.set(top, { top, size: Math.abs(item.transform[3]), text: item.str });
      }
      pages.push({ width, height, lines: [...lines.values()].sort((a, b) => a.top - b.top) });
    }
    return pages;
  } finally {
    await doc.destroy();
  }
}
