// Worker start cost: loadFontCatalog() + NodeCompiler.create() with all fonts,
// each run in a fresh process so nothing is cached between runs.
// Usage: node dist/bench/font-startup.js [runs]

import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { NodeCompiler as NodeCompilerType } from '@myriaddreamin/typst-ts-node-compiler';
import { loadFontCatalog } from '../src/render/fonts.js';

function measureOnce(): void {
  const require = createRequire(import.meta.url);
  const { NodeCompiler } = require('@myriaddreamin/typst-ts-node-compiler') as {
    NodeCompiler: typeof NodeCompilerType;
  };
  const t0 = performance.now();
  const catalog = loadFontCatalog();
  const t1 = performance.now();
  const compiler = NodeCompiler.create({ workspace: '/nonexistent-root', fontArgs: [{ fontBlobs: catalog.blobs }] });
  const t2 = performance.now();
  // First compile with a bundled font, since font parsing may be deferred.
  const doc = compiler.compile({ mainFileContent: '#set text(font: "Helvetica")\nHello' }).result;
  if (!doc) throw new Error('compile failed');
  compiler.pdf(doc);
  const t3 = performance.now();
  console.log(JSON.stringify({ catalogMs: t1 - t0, createMs: t2 - t1, firstPdfMs: t3 - t2, bytes: catalog.totalBytes }));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (process.argv[2] === '--once') {
  measureOnce();
} else {
  const runs = Number(process.argv[2] ?? 7);
  const self = fileURLToPath(import.meta.url);
  const results = Array.from({ length: runs }, () =>
    JSON.parse(execFileSync(process.execPath, [self, '--once'], { encoding: 'utf8' })) as Record<string, number>,
  );
  const pick = (k: string) => median(results.map((r) => r[k]!)).toFixed(1);
  console.log(
    `runs=${runs} fontBytes=${results[0]!.bytes} median ms: loadFontCatalog=${pick('catalogMs')} ` +
      `NodeCompiler.create=${pick('createMs')} first compile+pdf=${pick('firstPdfMs')} ` +
      `catalog+create=${median(results.map((r) => r.catalogMs! + r.createMs!)).toFixed(1)}`,
  );
}
