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
/**
 * Where npm looks for `name` from the package at `path`: its own
 * node_modules, then each enclosing one up to the root. The first entry found
 * is the one used; a missing one is added at the top if that place is free,
 * else beside the package that wants it (two versions of one binding, e.g.
 * the Typst binding and its alias for a later Typst, have their native
 * packages at different places).
 */
function placeOf(path, name) {
  const places = [];
  for (let at = path; ; ) {
    places.push(`${at ? `${at}/` : ''}node_modules/${name}`);
    if (!at) break;
    const cut = at.lastIndexOf('/node_modules/');
    at = cut < 0 ? '' : at.slice(0, cut);
  }
  return places;
}

for (const [path, pkg] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const places = placeOf(path, name);
    const found = places.find((key) => lock.packages[key]);
    // Only exact versions (as native packages are pinned) can disagree with what was found.
    if (found && (lock.packages[found].version === version || !/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(version))) continue;
    const key = found ? places[0] : places.at(-1);
    if (lock.packages[key]) continue;
    lock.packages[key] = { version, ...platformOf(name), optional: true };
    added++;
  }
}
const [root, ...rest] = Object.entries(lock.packages);
lock.packages = Object.fromEntries([root, ...rest.sort(([a], [b]) => (a < b ? -1 : 1))]);
writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform entries`);
