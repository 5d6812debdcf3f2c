// `npm run prepare`: compiles src/ into dist/ with TypeScript. npm runs it
// when the package is installed from a directory
// (`npm install /path/to/checkout/packages/client`), packed (`npm pack`), or
// installed as a workspace of the service (`npm ci` at the root).
//
// npm installs no devDependencies of a package installed from a directory, so
// in a fresh checkout (no `npm ci` at its root) TypeScript cannot be found.
// Then this installs the devDependencies (TypeScript and Node's types, the
// versions package.json names, from npm's cache when it has them) into a
// temporary directory, compiles with them, and removes it: nothing but dist/
// is left in the checkout.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = new URL('.', import.meta.url);
process.chdir(fileURLToPath(here));

function resolvable(require, name) {
  try {
    return require.resolve(name);
  } catch {
    return undefined;
  }
}

const local = createRequire(new URL('package.json', here));
let tsc = resolvable(local, 'typescript/bin/tsc');
const args = ['-p', 'tsconfig.json'];
let tools;
if (!tsc || !resolvable(local, '@types/node/package.json')) {
  const { devDependencies } = JSON.parse(readFileSync('package.json', 'utf8'));
  tools = mkdtempSync(join(tmpdir(), 'typst-pdf-client-build-'));
  console.error('typst-pdf-client: installing TypeScript to build dist/');
  const npm = process.env.npm_execpath;
  // The settings of the npm command that runs this one (`npm pack --dry-run`, `npm install -g`, a
  // workspace) are not for this install; those that reach the registry (cache, offline, CA) still are.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^npm_config_(dry_run|global|location|prefix|workspaces?|include_workspace_root|omit|include|only|production|save.*|package_lock.*)$/i.test(name),
    ),
  );
  const install = ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--ignore-scripts', '--prefix', tools];
  const specs = Object.entries(devDependencies).map(([name, range]) => `${name}@${range}`);
  const options = { stdio: ['ignore', 'ignore', 'inherit'], env };
  if (npm?.endsWith('.js')) execFileSync(process.execPath, [npm, ...install, ...specs], options);
  else execFileSync('npm', [...install, ...specs], options);
  tsc = join(tools, 'node_modules', 'typescript', 'bin', 'tsc');
  args.push('--typeRoots', join(tools, 'node_modules', '@types'));
}
try {
  execFileSync(process.execPath, [tsc, ...args], { stdio: 'inherit' });
} finally {
  if (tools) rmSync(tools, { recursive: true, force: true });
}
