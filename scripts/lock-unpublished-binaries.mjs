// Some packages list optional native packages for platforms whose builds
// the registry this project installs from does not serve (the Typst binding
// published only linux-x64 gnu and musl at its version; Biome's and
// oxc-parser's other platforms may be missing too). npm leaves them out of
// package-lock.json and `npm ci` then refuses the lock file. This adds a
// platform-restricted entry for each (os, cpu, and libc on Linux), which
// `npm ci` skips on every other platform without fetching. Run after
// changing dependencies:
//   node scripts/lock-unpublished-binaries.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const LOCK = new URL('../package-lock.json', import.meta.url);
const OS = ['android', 'darwin', 'freebsd', 'linux', 'win32', 'openharmony', 'sunos', 'aix', 'netbsd', 'openbsd'];
const CPU = ['arm64', 'x64', 'arm', 'ia32', 'riscv64', 's390x', 'ppc64', 'loong64', 'mips64el'];

/** os, cpu and libc from a platform package's name, e.g. "@biomejs/cli-linux-x64-musl". */
function platformOf(name) {
  const tokens = name.split('/').at(-1).split('-');
  const os = OS.find((o) => tokens.includes(o));
  const cpu = CPU.find((c) => tokens.includes(c));
  if (!os || !cpu) throw new Error(`cannot tell the platform of ${name}`);
  const entry = { cpu: [cpu], os: [os] };
  if (os === 'linux') entry.libc = [tokens.some((t) => t.startsWith('musl')) ? 'musl' : 'glibc'];
  return entry;
}

const lock = JSON.parse(readFileSync(LOCK, 'utf8'));
let added = 0;
for (const pkg of Object.values(lock.packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key]) continue;
    lock.packages[key] = { version, ...platformOf(name), optional: true };
    added++;
  }
}
const [root, ...rest] = Object.entries(lock.packages);
lock.packages = Object.fromEntries([root, ...rest.sort(([a], [b]) => (a < b ? -1 : 1))]);
writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform entries`);
