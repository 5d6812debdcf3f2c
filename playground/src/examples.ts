/**
 * The examples menu, from the table in playground/examples.json: one row
 * per example, naming files of the repository's examples/ folder. The first
 * row is the one the page opens with.
 *
 * To add an example, put its files in examples/ and add a row, e.g.
 *   { "id": "invoice", "label": "Invoice (Japanese)", "template": "invoice.typ",
 *     "data": "invoice.json", "assets": { "logo.png": "invoice-logo.png" } }
 * `assets` maps the name the template uses (`#image("logo.png")`) to the
 * file in examples/; `typst` and `pdf` set the page's engine and PDF
 * standard menus when the example is opened. The build (scripts/build-playground.mjs) checks that
 * every file named exists and publishes those files, and only those, at
 * /playground/examples/.
 */
import table from '../examples.json';
import { assetFromBlob, type Asset } from './assets.js';

export interface Example {
  id: string;
  label: string;
  template: string;
  data: string;
  assets?: Record<string, string>;
  /** The engine the example needs ("0.14" for Typst 0.14 functions such as `pdf.attach`); absent: the service's default. */
  typst?: string;
  /** PDF export options (Typst 0.14), e.g. { "standard": "a-3b" }; `einvoice` makes the example a Factur-X invoice of that profile. */
  pdf?: { standard?: string; tagged?: boolean; einvoice?: { profile?: string; xml?: string } };
}

export const EXAMPLES: readonly Example[] = table;

export const DEFAULT_EXAMPLE = EXAMPLES[0]!;

export interface LoadedExample {
  template: string;
  data: string;
  assets: Asset[];
}

async function fetchFile(name: string): Promise<Response> {
  // The default example's files are preloaded by index.html; this fetch then takes them from the preload.
  const response = await fetch(`/playground/examples/${encodeURIComponent(name)}`);
  if (!response.ok) throw new Error(`example file ${name}: ${response.status}`);
  return response;
}

export async function loadExample(example: Example): Promise<LoadedExample> {
  const [template, data, assets] = await Promise.all([
    fetchFile(example.template).then((r) => r.text()),
    fetchFile(example.data).then((r) => r.text()),
    Promise.all(
      Object.entries(example.assets ?? {}).map(async ([name, file]) => assetFromBlob(name, await (await fetchFile(file)).blob())),
    ),
  ]);
  return { template, data, assets };
}
