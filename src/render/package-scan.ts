/**
 * The operator's packages (PACKAGE_PATH), as the workers' Typst finds them,
 * and whether one could hand a template `eval`. A package's code resolves
 * every path inside its package, but `eval` resolves the paths of the code
 * it runs against the code that calls it, so a package that hands `eval` out
 * as a value (`#let e = eval`) lets a template parse its own request's files
 * through it. Code reaches `eval` (in Typst 0.14) only by that name or
 * through `std` (source-reading-words.ts), so packages in none of whose
 * files either is a word hand out no `eval`.
 *
 * Such a verdict holds only for the files read, so the directory is copied
 * at start and the copy is both what is read and what Typst uses: a package
 * added or changed later takes effect after a restart. Anything that cannot
 * be vouched for leaves PACKAGE_PATH linked in place (changes take effect at
 * once) and the verdict "may": a symbolic link inside it, a file that cannot
 * be read, more than MAX_COPIED_MIB in all (or a copy that fails).
 */
import { chmodSync, cpSync, lstatSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { namesEval } from './source-reading-words.js';

/** The most of an operator's package directory that is copied at start: well inside the container's 16 MiB `/tmp`. */
export const MAX_COPIED_MIB = 8;
const MAX_COPIED_BYTES = MAX_COPIED_MIB * 1024 * 1024;

/**
 * Makes `target` the packages' directory: a copy of `source` when no file of the copy names `eval` or
 * `std`, else a link to `source`. Returns whether the packages there may hand out `eval`.
 */
export function providePackages(source: string, target: string): boolean {
  if (treeBytes(source) <= MAX_COPIED_BYTES) {
    try {
      cpSync(source, target, { recursive: true, verbatimSymlinks: true });
      if (!mayHandOutEval(target)) return false;
    } catch {
      // Not copied whole: linked below, and taken to hand it out.
    }
    try {
      removeCopy(target);
      symlinkSync(source, target, 'dir');
    } catch {
      // What could not be removed stays, used as it is with the rule off: the verdict below holds for it too.
    }
    return true;
  }
  symlinkSync(source, target, 'dir');
  return true;
}

/**
 * Removes a copy, whose directories keep the modes of the operator's (a read-only one, 0555, cannot be
 * emptied by a service that does not run as root): each is made its owner's to write first.
 */
export function removeCopy(path: string): void {
  try {
    makeOwnersToWrite(path);
  } catch {
    // Gone already, or not ours: rmSync says what it can.
  }
  rmSync(path, { recursive: true, force: true });
}

/** Gives the owner of every directory under `path` (links not followed) the right to change it. */
export function makeOwnersToWrite(path: string): void {
  if (!lstatSync(path).isDirectory()) return;
  chmodSync(path, 0o700);
  for (const name of readdirSync(path)) makeOwnersToWrite(join(path, name));
}

/** The size of the files under `path`; infinite with a link, a special file, or what cannot be read. */
function treeBytes(path: string): number {
  try {
    const stat = lstatSync(path);
    if (stat.isDirectory()) return readdirSync(path).reduce((sum, name) => sum + treeBytes(join(path, name)), 0);
    return stat.isFile() ? stat.size : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** True unless every entry under `path` is a directory or a file that was read and names neither `eval` nor `std`. */
function mayHandOutEval(path: string): boolean {
  try {
    const stat = lstatSync(path);
    if (stat.isDirectory()) return readdirSync(path).some((name) => mayHandOutEval(join(path, name)));
    return !stat.isFile() || namesEval(readFileSync(path));
  } catch {
    return true;
  }
}
