/**
 * `npm run examples`: renders the reference templates in examples/ with their
 * sample data through a running service, into out/. The service is found at
 * TYPST_PDF_URL (default http://localhost:3000) with the key TYPST_PDF_API_KEY.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_URL, type PdfOptions, TypstPdfError, type TypstEngine, generatePdf } from 'typst-pdf-client';

/** The examples and the files each sends as `assets`: the list the playground's menu offers too. */
interface Example {
  id: string;
  template: string;
  data: string;
  /** Asset name -> file in examples/. */
  assets?: Record<string, string>;
  /** The engine the example needs, and its PDF options (Typst 0.14). */
  typst?: TypstEngine;
  pdf?: PdfOptions;
}

// dist/scripts/render-examples.js -> the package root.
const root = new URL('../../', import.meta.url);
const examplesDir = fileURLToPath(new URL('examples/', root));
const EXAMPLES = JSON.parse(readFileSync(new URL('playground/examples.json', root), 'utf8')) as Example[];
const outDir = 'out';
const url = process.env.TYPST_PDF_URL || DEFAULT_URL;
const apiKey = process.env.TYPST_PDF_API_KEY;

mkdirSync(outDir, { recursive: true });
let failed = 0;
for (const example of EXAMPLES) {
  const template = readFileSync(join(examplesDir, example.template), 'utf8');
  const data = JSON.parse(readFileSync(join(examplesDir, example.data), 'utf8')) as Record<string, unknown>;
  const out = join(outDir, `${example.id}.pdf`);
  try {
    const files = Object.fromEntries(
      Object.entries(example.assets ?? {}).map(([name, file]) => [name, readFileSync(join(examplesDir, file))]),
    );
    const { pdf } = await generatePdf({ data, template, assets: files, typst: example.typst, pdf: example.pdf }, { url, apiKey });
    writeFileSync(out, pdf);
    console.log(`${out}: ${pdf.byteLength} bytes`);
  } catch (error) {
    failed++;
    const detail = error instanceof TypstPdfError && error.status !== 0 ? `${error.status} ${error.message}` : (error as Error).message;
    console.error(`examples/${example.template}: ${detail}`);
  }
}
if (failed > 0 && !apiKey) console.error(`Is TYPST_PDF_API_KEY set to a key of the service at ${url}?`);
process.exitCode = failed > 0 ? 1 : 0;
