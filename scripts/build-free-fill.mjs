// Compiles native/free-fill.c into dist/native/free-fill.so, which the
// service preloads in front of glibc's malloc to fill every block freed
// (src/retention/freed-memory-fill.ts). Part of `npm run build`. Without a
// C compiler (`cc`) it says so and leaves the file out: the service then
// fills freed memory with glibc's malloc settings instead, and says so at start.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../native/free-fill.c', import.meta.url));
const outDir = fileURLToPath(new URL('../dist/native/', import.meta.url));
const output = `${outDir}free-fill.so`;

mkdirSync(outDir, { recursive: true });
rmSync(output, { force: true });
// Left by builds of earlier versions, which preloaded a realloc() alone.
rmSync(`${outDir}realloc-fill.so`, { force: true });
const result = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-o', output, source, '-ldl'], { stdio: 'inherit' });
if (result.error || result.status !== 0) {
  console.log('native: no C compiler (cc) or it failed: dist/native/free-fill.so not built; freed memory will be filled by glibc');
} else {
  console.log('native: dist/native/free-fill.so');
}
