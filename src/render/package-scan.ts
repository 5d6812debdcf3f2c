/**
 * Whether an operator's packages (PACKAGE_PATH) could hand a template
 * `eval`: a package's code resolves every path inside its package, but
 * `eval` resolves the paths of the code it runs against the span of its
 * argument, so a package that hands `eval` out as a value (`#let e = eval`)
 * lets a template parse its own request's files through it. Code reaches
 * `eval` only by that name or through `std` (source-reading-words.ts), so a
 * directory in which no file holds either as a word hands out no `eval`.
 *
 * Read once, by the server at start. Anything it cannot vouch for counts
 * as handing it out: a symbolic link (it could lead outside what is read),
 * a file it cannot read, more than MAX_SCANNED_BYTES in all.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { namesEval } from './source-reading-words.js';

/** The most of an operator's package directory that is read at start. */
const MAX_SCANNED_BYTES = 256 * 1024 * 1024;

/** True unless every file under `dir` was read and none names `eval` or `std` as a word; true without a directory. */
export function packagesMayHandOutEval(dir: string | undefined): boolean {
  if (!dir) return true;
  let scanned = 0;
  const walk = (path: string): boolean => {
    const stat = lstatSync(path);
    if (stat.isDirectory()) return readdirSync(path).some((name) => walk(join(path, name)));
    if (!stat.isFile()) return true;
    scanned += stat.size;
    if (scanned > MAX_SCANNED_BYTES) return true;
    return namesEval(readFileSync(path));
  };
  try {
    return walk(dir);
  } catch {
    return true;
  }
}
