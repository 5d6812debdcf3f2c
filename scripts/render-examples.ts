/**
 * `npm run examples`: renders the reference templates in examples/ with their
 * sample data through a running service, into out/. The service is found at
 * TYPST_PDF_URL (default http://localhost:3000) with the key TYPST_PDF_API_KEY.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_URL, TypstPdfError, generatePdf } from 'typst-pdf-client';

/** Each example, and the files of examples/ it sends as `assets`. */
const EXAMPLES: { name: string; assets?: string[] }[] = [
  { name: 'report' },
  { name: 'letter', assets: ['letterhead.svg'] },
  { name: 'invoice-ja' },
];

// dist/scripts/render-examples.js -> examples/ at the package root.
const examplesDir = fileURLToPath(new URL('../../examples/', import.meta.url));
const outDir = 'out';
const url = process.env.TYPST_PDF_URL || DEFAULT_URL;
const apiKey = process.env.TYPST_PDF_API_KEY;

mkdirSync(outDir, { recursive: true });
let failed = 0;
for (const { name, assets } of EXAMPLES) {
  const template = readFileSync(join(examplesDir, `${name}.typ`), 'utf8');
  const data = JSON.parse(readFileSync(join(examplesDir, `${name}.json`), 'utf8')) as Record<string, unknown>;
  const out = join(outDir, `${name}.pdf`);
  try {
    const files = Object.fromEntries((assets ?? []).map((file) => [file, readFileSync(join(examplesDir, file))]));
    const { pdf } = await generatePdf({ data, template, assets: files }, { url, apiKey });
    writeFileSync(out, pdf);
    console.log(`${out}: ${pdf.byteLength} bytes`);
  } catch (error) {
    failed++;
    const detail = error instanceof TypstPdfError && error.status !== 0 ? `${error.status} ${error.message}` : (error as Error).message;
    console.error(`examples/${name}.typ: ${detail}`);
  }
}
if (failed > 0 && !apiKey) console.error(`Is TYPST_PDF_API_KEY set to a key of the service at ${url}?`);
process.exitCode = failed > 0 ? 1 : 0;
