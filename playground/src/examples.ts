/**
 * The examples menu. Each row names files of the repository's examples/
 * folder, which the build copies to /playground/examples/. To add an
 * example, put its files in examples/ and add a row; `assets` maps the name
 * the template uses (`#image("logo.png")`) to the file in examples/.
 */
import { assetFromBlob, type Asset } from './assets.js';

export interface Example {
  id: string;
  label: string;
  template: string;
  data: string;
  assets?: Record<string, string>;
}

export const EXAMPLES: readonly Example[] = [
  { id: 'report', label: 'Report (A4, table over pages)', template: 'report.typ', data: 'report.json' },
  { id: 'letter', label: 'Business letter (US Letter)', template: 'letter.typ', data: 'letter.json' },
];

export const DEFAULT_EXAMPLE = EXAMPLES[0]!;

export interface LoadedExample {
  template: string;
  data: string;
  assets: Asset[];
}

async function fetchFile(name: string): Promise<Response> {
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
