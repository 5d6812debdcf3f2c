/** Typst package directories as PACKAGE_PATH holds them: `<namespace>/<name>/<version>/`, with a manifest and `lib.typ`. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Adds `@preview/<name>:<version>` to `root`, its entry point `lib.typ` holding `lib`; returns the package's directory. */
export function addPackage(root: string, name: string, version: string, lib: string): string {
  const dir = join(root, 'preview', name, version);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'typst.toml'),
    `[package]\nname = "${name}"\nversion = "${version}"\nentrypoint = "lib.typ"\nauthors = ["Test"]\nlicense = "MIT"\ndescription = "test"\n`,
  );
  writeFileSync(join(dir, 'lib.typ'), lib);
  return dir;
}

/** A new directory of packages holding `@preview/greeting:0.1.0` with `lib`; the caller removes it. */
export function packageDirectory(lib: string): string {
  const root = mkdtempSync(join(tmpdir(), 'typst-test-packages-'));
  addPackage(root, 'greeting', '0.1.0', lib);
  return root;
}
