/**
 * The environment a worker process runs in. The compiler inherits nothing
 * of the server's environment: no system fonts, no home directory, no cache directory it
 * could write to, and a proxy that cannot be reached, so that a package
 * download Typst might attempt fails at once without leaving the host
 * (port 0 can never be listened on).
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// Not from engine.js: that loads the native compiler, which only workers may do (a failure there is reported, not a crash).
import { VIRTUAL_ROOT } from './virtual-root.js';
import { providePackages, removeCopy } from './package-scan.js';
import { workerAllocatorEnv } from './worker-allocator.js';

/** The stack of a worker's threads: its main thread's (set on the server at start, process-limits.ts) and the engines'. */
export const WORKER_STACK_BYTES = 64 * 1024 * 1024;

const UNREACHABLE_PROXY = 'http://0.0.0.0:0';

export interface Sandbox {
  env: NodeJS.ProcessEnv;
  /** Whether a package the workers can import could hand a template `eval` (package-scan.ts); true without packages. */
  packagesMayHandOutEval: boolean;
  /** Where the workers find the packages (the copy, or the link to PACKAGE_PATH); undefined without packages. */
  packageDirectory: string | undefined;
  /** Removes what the sandbox set up at start (the packages' copy, or the link to them). */
  dispose(): void;
}

/**
 * Typst looks for packages in `$XDG_DATA_HOME/typst/packages/<namespace>/<name>/<version>`.
 * An operator's PACKAGE_PATH holds `<namespace>/<name>/<version>` directly, so
 * a private directory maps it there: a copy of it, or a link to it
 * (package-scan.ts). Created once at start.
 */
export function createSandbox(packagePath: string | undefined): Sandbox {
  let dataHome = join(VIRTUAL_ROOT, 'data');
  let dispose = (): void => undefined;
  let packagesMayHandOutEval = true;
  let packageDirectory: string | undefined;
  if (packagePath) {
    const dir = mkdtempSync(join(tmpdir(), 'typst-pdf-packages-'));
    mkdirSync(join(dir, 'typst'));
    packageDirectory = join(dir, 'typst', 'packages');
    packagesMayHandOutEval = providePackages(packagePath, packageDirectory);
    dataHome = dir;
    // A copy of the packages keeps the operator's modes: removeCopy makes each directory ours to empty first.
    dispose = () => removeCopy(dir);
  }
  const env: NodeJS.ProcessEnv = {
    HOME: VIRTUAL_ROOT,
    XDG_DATA_HOME: dataHome,
    XDG_CACHE_HOME: join(VIRTUAL_ROOT, 'cache'),
    XDG_CONFIG_HOME: join(VIRTUAL_ROOT, 'config'),
    HTTP_PROXY: UNREACHABLE_PROXY,
    HTTPS_PROXY: UNREACHABLE_PROXY,
    ALL_PROXY: UNREACHABLE_PROXY,
    http_proxy: UNREACHABLE_PROXY,
    https_proxy: UNREACHABLE_PROXY,
    all_proxy: UNREACHABLE_PROXY,
    NO_PROXY: '',
    no_proxy: '',
    // No system fonts: documents look the same on every host, and the fonts
    // the worker reports (GET /v1/fonts) are exactly the fonts it has.
    FONTCONFIG_FILE: '/dev/null',
    // The engines' thread pools get the stack the worker's main thread has (process-limits.ts), not Rust's 2 MiB:
    // Typst 0.14's PDF export of an SVG of 6,000 images overflowed it (about 80,000 need 64 MiB), now and then.
    RUST_MIN_STACK: String(WORKER_STACK_BYTES),
    // The compiler frees a job's sources, data, layout and PDF without clearing them: the
    // allocator fills them as they go, and asks for huge pages (worker-allocator.ts).
    ...workerAllocatorEnv(),
  };
  return { env, dispose, packagesMayHandOutEval, packageDirectory };
}
