// Compiles native/realloc-fill.c into dist/native/realloc-fill.so, the
// realloc() that the service preloads before jemalloc (src/retention/freed-memory-fill.ts).
// Part of `npm run build`. Without a C compiler (`cc`) it says so and leaves
// the file out: the service then fills freed memory with glibc's malloc
// settings instead, and says so at start.
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../native/realloc-fill.c', import.meta.url));
const outDir = fileURLToPath(new URL('../dist/native/', import.meta.url));
const output = `${outDir}realloc-fill.so`;

mkdirSync(outDir, { recursive: true });
rmSync(output, { force: true });
const result = spawnSync('cc', ['-shared', '-fPIC', '-O2', '-Wall', '-Werror', '-o', output, source, '-ldl'], { stdio: 'inherit' });
if (result.error || result.status !== 0) {
  console.log('native: no C compiler (cc) or it failed: dist/native/realloc-fill.so not built; freed memory will be filled by glibc');
} else {
  console.log('native: dist/native/realloc-fill.so');
}
