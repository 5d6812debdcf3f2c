// Builds the template playground (playground/) into dist/playground/, the
// folder the service serves at /playground. Part of `npm run build`; needs
// only what `npm ci` installed (no network).
//
//   dist/playground/index.html                 the page, naming the hashed files below
//   dist/playground/assets/app-<hash>.js       the page's code with CodeMirror, bundled by esbuild
//   dist/playground/assets/pdf-<hash>.js       pdf.js, a chunk the page imports once it runs
//   dist/playground/assets/app-<hash>.css      its styles
//   dist/playground/assets/pdf.worker-<hash>.mjs  pdf.js's worker, copied as published
//   dist/playground/THIRD-PARTY-NOTICES.txt     the licences of the bundled packages
//   dist/playground/examples/*                 the files of examples/ that playground/examples.json names
//
// Every text file also gets .br and .gz twins, which the service sends to
// browsers that accept them (@fastify/static's preCompressed).
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCE = join(ROOT, 'playground');
const OUT = join(ROOT, 'dist', 'playground');
const ASSETS = join(OUT, 'assets');
const COMPRESSIBLE = /\.(html|js|mjs|css|typ|json|svg|csv|txt)$/i;

function contentHash(bytes) {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 10);
}

const EXAMPLES = JSON.parse(readFileSync(join(SOURCE, 'examples.json'), 'utf8'));
const DEFAULT_EXAMPLE = EXAMPLES[0];
const exampleFiles = new Set(EXAMPLES.flatMap((row) => [row.template, row.data, ...Object.values(row.assets ?? {})]));
for (const file of exampleFiles) {
  if (typeof file !== 'string' || !/^[\w.-]+$/.test(file))
    throw new Error(`playground/examples.json: "${file}" is not a file name in examples/`);
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(ASSETS, { recursive: true });

// pdf.js runs its parser in a worker loaded from its own URL; the published
// minified file is used as is, under a content-hashed name.
const workerSource = join(ROOT, 'node_modules', 'pdfjs-dist', 'build', 'pdf.worker.min.mjs');
const workerBytes = readFileSync(workerSource);
const workerName = `pdf.worker-${contentHash(workerBytes)}.mjs`;
writeFileSync(join(ASSETS, workerName), workerBytes);

/**
 * CodeMirror injects its styles through the style-mod package, which writes
 * them into a <style> element when the editor is in a document (it uses a
 * constructed style sheet only inside shadow roots). A <style> element's text
 * is an inline style, which the page's Content-Security-Policy refuses; a
 * constructed sheet (CSSOM) is not governed by it. This one-line change,
 * made while bundling, has style-mod use a constructed sheet in documents too.
 * The build stops if a new style-mod no longer has the line.
 */
const constructedStyleSheets = {
  name: 'style-mod-constructed-sheets',
  setup(builder) {
    builder.onLoad({ filter: /[\\/]style-mod[\\/]src[\\/]style-mod\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const line = 'if (!root.head && root.adoptedStyleSheets && win.CSSStyleSheet)';
      if (!source.includes(line))
        throw new Error(`${args.path}: the line to change is gone; check how this style-mod version mounts styles`);
      return { contents: source.replace(line, 'if (root.adoptedStyleSheets && win.CSSStyleSheet)'), loader: 'js' };
    });
  },
};

const result = await build({
  absWorkingDir: ROOT,
  entryPoints: { app: join(SOURCE, 'src', 'main.ts'), style: join(SOURCE, 'src', 'style.css') },
  outdir: ASSETS,
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  splitting: true,
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome111', 'firefox115', 'safari16.4'],
  sourcemap: false,
  legalComments: 'linked',
  metafile: true,
  logLevel: 'warning',
  plugins: [constructedStyleSheets],
  define: { PDF_WORKER_URL: JSON.stringify(`/playground/assets/${workerName}`) },
});

// The licences of the packages bundled into the page (and of pdf.js, whose worker is copied), for
// /playground/THIRD-PARTY-NOTICES.txt, which the page links to.
const bundled = new Set(['pdfjs-dist']);
for (const input of Object.keys(result.metafile.inputs)) {
  const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (match) bundled.add(match[1]);
}
const notices = [...bundled].sort().map((name) => {
  const dir = join(ROOT, 'node_modules', name);
  const meta = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const licenceFile = readdirSync(dir).find((file) => /^licen[cs]e/i.test(file));
  if (!licenceFile) throw new Error(`playground build: ${name} has no licence file`);
  return `${name}@${meta.version} (${meta.license})\n\n${readFileSync(join(dir, licenceFile), 'utf8').trim()}\n`;
});
writeFileSync(
  join(OUT, 'THIRD-PARTY-NOTICES.txt'),
  `The playground page includes the following packages, bundled unmodified except where noted\n` +
    `(style-mod: one line changed at build time, see scripts/build-playground.mjs).\n\n` +
    notices.join(`\n${'-'.repeat(72)}\n\n`),
);

const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file));
const script = outputs.find((name) => /^app-.*\.js$/.test(name));
const style = outputs.find((name) => /^style-.*\.css$/.test(name));
if (!script || !style) throw new Error(`playground build: missing output (${outputs.join(', ')})`);
// Chunks the page imports later (pdf.js) are fetched alongside the main script.
const chunks = outputs.filter((name) => name.endsWith('.js') && name !== script);

// The default example (the table's first row) is fetched while the script loads, not after it runs.
const preload = [
  ...chunks.map((name) => `<link rel="modulepreload" href="/playground/assets/${name}">`),
  ...[DEFAULT_EXAMPLE.template, DEFAULT_EXAMPLE.data].map(
    (file) => `<link rel="preload" href="/playground/examples/${encodeURIComponent(file)}" as="fetch" crossorigin="anonymous">`,
  ),
].join('\n  ');
const html = readFileSync(join(SOURCE, 'index.html'), 'utf8')
  .replaceAll('{{preload}}', preload)
  .replaceAll('{{script}}', `/playground/assets/${script}`)
  .replaceAll('{{style}}', `/playground/assets/${style}`)
  .replaceAll('{{worker}}', `/playground/assets/${workerName}`);
if (/\{\{\w+\}\}/.test(html)) throw new Error('playground build: index.html has an unknown placeholder');
writeFileSync(join(OUT, 'index.html'), html);
copyFileSync(join(SOURCE, 'favicon.svg'), join(OUT, 'favicon.svg'));

// The examples the page offers (playground/examples.json): every file a row names must exist,
// and those files, and only those, are published.
const examplesOut = join(OUT, 'examples');
mkdirSync(examplesOut, { recursive: true });
for (const file of exampleFiles) {
  const from = join(ROOT, 'examples', file);
  if (!existsSync(from) || !statSync(from).isFile())
    throw new Error(`playground/examples.json names examples/${file}, which does not exist`);
  copyFileSync(from, join(examplesOut, file));
}

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

let total = 0;
let compressed = 0;
for (const file of walk(OUT)) {
  const bytes = readFileSync(file);
  total += bytes.length;
  if (!COMPRESSIBLE.test(extname(file)) || bytes.length < 1024) {
    compressed += bytes.length;
    continue;
  }
  const br = brotliCompressSync(bytes, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 10, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
  });
  writeFileSync(`${file}.br`, br);
  writeFileSync(`${file}.gz`, gzipSync(bytes, { level: 9 }));
  compressed += br.length;
}

const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
console.log(`playground: ${relative(ROOT, OUT)}/ ${kb(total)} (${kb(compressed)} brotli) — ${script}, ${style}, ${workerName}`);
