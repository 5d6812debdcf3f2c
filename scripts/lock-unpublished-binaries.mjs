// The Typst binding lists optional native packages for platforms it never
// published at this version (only linux-x64 gnu and musl exist). npm leaves
// them out of package-lock.json and `npm ci` then refuses the lock file.
// This adds a platform-restricted entry for each, which npm ci skips on
// other platforms without fetching. Run after changing dependencies:
//   node scripts/lock-unpublished-binaries.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const LOCK = new URL('../package-lock.json', import.meta.url);
const BINDING = 'node_modules/@myriaddreamin/typst-ts-node-compiler';
const TARGETS = {
  'win32-x64-msvc': ['win32', 'x64'],
  'win32-arm64-msvc': ['win32', 'arm64'],
  'darwin-x64': ['darwin', 'x64'],
  'darwin-arm64': ['darwin', 'arm64'],
  'linux-x64-gnu': ['linux', 'x64'],
  'linux-x64-musl': ['linux', 'x64'],
  'linux-arm64-gnu': ['linux', 'arm64'],
  'linux-arm64-musl': ['linux', 'arm64'],
  'linux-arm-gnueabihf': ['linux', 'arm'],
  'android-arm64': ['android', 'arm64'],
  'android-arm-eabi': ['android', 'arm'],
};

const lock = JSON.parse(readFileSync(LOCK, 'utf8'));
const binding = lock.packages[BINDING];
let added = 0;
for (const [name, version] of Object.entries(binding.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  const [os, cpu] = TARGETS[name.split('typst-ts-node-compiler-')[1]] ?? [];
  if (!os) throw new Error(`unknown platform package ${name}`);
  lock.packages[key] = { version, cpu: [cpu], os: [os], optional: true };
  added++;
}
const [root, ...rest] = Object.entries(lock.packages);
lock.packages = Object.fromEntries([root, ...rest.sort(([a], [b]) => (a < b ? -1 : 1))]);
writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform entries`);
